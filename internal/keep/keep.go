// Package keep gives tests a temporary folder that outlives a failure:
// a real-clock test that fails once in many suite runs leaves its run
// folder (run.json, results.bin) for a later look instead of only its log.
package keep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env names the folder failed tests' folders are copied under; unset,
// nothing is kept.
const Env = "RATECHECK_KEEP_FAILED"

// Dir returns a new temporary folder (t.TempDir). When the test fails and
// $RATECHECK_KEEP_FAILED names a folder, the temporary one is copied into
// a new folder under it named after the test, before it is removed; the
// test's log says where.
func Dir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	keep := os.Getenv(Env)
	if keep == "" {
		return dir
	}
	t.Cleanup(func() { // before TempDir's own cleanup, which runs last
		if !t.Failed() {
			return
		}
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Logf("keeping %s: %v", dir, err)
			return
		}
		to, err := os.MkdirTemp(keep, strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())+"-")
		if err != nil {
			t.Logf("keeping %s: %v", dir, err)
			return
		}
		if err := os.CopyFS(filepath.Join(to, "dir"), os.DirFS(dir)); err != nil {
			t.Logf("keeping %s: %v", dir, err)
			return
		}
		t.Logf("kept %s in %s", dir, to)
	})
	return dir
}
