package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/connectbyjbrh/ratecheck/report"
)

// maxLabel bounds --label: a release name, not a paragraph.
const maxLabel = 100

// metricsFlag declares --metrics into fs.
func metricsFlag(fs *flag.FlagSet, path *string) {
	fs.StringVar(path, "metrics", "", "also write the verdict and figures in the Prometheus text format to `file` (docs/metrics.md)")
}

// checkLabel validates --label: printable text of at most maxLabel bytes.
func checkLabel(label string) error {
	if len(label) > maxLabel {
		return fmt.Errorf("--label is %d bytes long: want at most %d, such as v1.4.2", len(label), maxLabel)
	}
	for _, r := range label {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			return fmt.Errorf("--label %q: want printable text, such as v1.4.2", label)
		}
	}
	return nil
}

// withFaults is cfg with the --faults of the embedded target (options
// reports a spec that does not parse).
func (rf *runFlags) withFaults(cfg refserver.Config) refserver.Config {
	if f, err := refserver.ParseFaults(rf.faults); err == nil {
		cfg.Faults = f
	}
	return cfg
}

// checkRun validates --label, --faults and --metrics.
func (rf *runFlags) checkRun() error {
	if err := checkLabel(rf.label); err != nil {
		return err
	}
	if rf.faults != "" && rf.target != "" {
		return fmt.Errorf("--faults configures the embedded target; a --target has faults of its own")
	}
	if _, err := refserver.ParseFaults(rf.faults); err != nil {
		return fmt.Errorf("--faults: %v", err)
	}
	return checkOutFile("--metrics", rf.metrics)
}

// saveMetrics writes m to path in the Prometheus text format, whole or
// not at all (an empty path writes nothing), and reports whether it did;
// a failure is said on stderr for command name, whose run is kept in dir.
func saveMetrics(name, path string, m *report.Metrics, dir string, stderr io.Writer) bool {
	if path == "" {
		return true
	}
	err := errors.New("the run could not be analyzed")
	if m != nil {
		err = report.WriteMetricsFile(path, *m)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: --metrics: %v (the run is kept in %s)\n", name, err, dir)
		return false
	}
	return true
}

// attackMetrics is what an attack analyzed into rep tells a dashboard
// (nil: the analysis failed).
func attackMetrics(run *attack.Run, rep *analyze.Report) *report.Metrics {
	if rep == nil {
		return nil
	}
	m := report.VerdictMetrics(run.Info, rep, false)
	return &m
}

// ptrTo is a pointer to v.
func ptrTo[T any](v T) *T { return &v }
