package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// readMetrics reads a --metrics file as the Prometheus project's own
// tools do: with its text parser, and through its linter (promtool check
// metrics, in Debian's prometheus package, which .ci/run installs), any
// complaint of which fails the test. Without promtool on PATH the file is
// only parsed, and in CI that fails too.
func readMetrics(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("--metrics %s: %v", path, err)
	}
	promtool, err := exec.LookPath("promtool")
	switch {
	case err != nil && os.Getenv("CI") == "true":
		t.Errorf("no promtool on PATH: .ci/run installs Debian's prometheus package for it")
	case err != nil:
		t.Logf("no promtool on PATH (apt-get install prometheus): %s parsed, not linted", path)
	default:
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(b)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics %s: %v\n%s", path, err, out)
		}
	}
	return mfs
}
