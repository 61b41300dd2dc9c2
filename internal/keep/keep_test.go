package keep

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFailingHelper fails on purpose when run by TestDir (its variable
// set), with a file in its folder; otherwise it does nothing.
func TestFailingHelper(t *testing.T) {
	if os.Getenv("KEEP_TEST_FAIL") == "" {
		return
	}
	dir := Dir(t)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Error("failing on purpose")
}

// TestPassingHelper passes with a file in its folder when run by TestDir.
func TestPassingHelper(t *testing.T) {
	if os.Getenv("KEEP_TEST_FAIL") == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(Dir(t), "run.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDir runs the two helpers in a child process: the failed one's
// folder is kept under $RATECHECK_KEEP_FAILED, the passed one's is not.
func TestDir(t *testing.T) {
	t.Parallel()
	kept := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^(TestFailingHelper|TestPassingHelper)$")
	cmd.Env = append(os.Environ(), "KEEP_TEST_FAIL=1", Env+"="+kept)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the child passed, want TestFailingHelper failed:\n%s", out)
	}
	got, _ := filepath.Glob(filepath.Join(kept, "*", "dir", "run.json"))
	if len(got) != 1 || filepath.Base(filepath.Dir(filepath.Dir(got[0])))[:len("TestFailingHelper-")] != "TestFailingHelper-" {
		all, _ := filepath.Glob(filepath.Join(kept, "*"))
		t.Errorf("kept %v (folders %v), want only TestFailingHelper's run.json", got, all)
	}
}
