package main

import (
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestFollowUpDueBeforeTheAnalysisEnded: follow-up probes whose planned
// end had passed when the plan's analysis ended (a busy host) are not
// sent, and the line says how long ago they were due, never a negative
// time left. The plan's results are a real run's against a limiter that
// forgets refusals (its rejected_count always asks for the follow-up),
// moved ten windows into the past.
func TestFollowUpDueBeforeTheAnalysisEnded(t *testing.T) {
	t.Parallel()
	const w = 2 * time.Second
	cfg := refserver.DefaultConfig()
	cfg.Window, cfg.Limiter = w, refserver.AdmittedOnly
	srv, err := refserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	out := t.TempDir()
	// Its verdict is TestVerifyFailsOnWrongTargets' business: this test needs
	// the plan's results only.
	if code, stdout, stderr := runCmd(t, "verify", "--out", out, "--target", ts.URL, "--window", w.String()); code != exitCheckFailed && code != exitInconclusive {
		t.Fatalf("verify: exit %d, want a verdict (1 or 4)\n%s%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-verify"))
	if len(dirs) != 1 {
		t.Fatalf("run folders %v", dirs)
	}
	all, _ := readArchive(t, dirs[0])
	var plan []*vegeta.Result
	for i := range all {
		r := &all[i]
		if strings.Contains(r.Attack, "stream="+method.StreamFollowUp) { // the burst too
			continue
		}
		r.Timestamp = r.Timestamp.Add(-10 * w)
		plan = append(plan, r)
	}
	v := verifyRun{plan: attack.Plan{Window: w}, surfaces: []string{method.REST, method.MCP}, limits: map[string]int{method.REST: 240, method.MCP: 120}}
	var stderr strings.Builder
	send, said := followUp(v, defaultMaxDuration, &stderr).Decide(plan)
	if len(said) == 0 {
		t.Fatalf("no follow-up line; stderr:\n%s", stderr.String())
	}
	negative := regexp.MustCompile(`[ (]-[0-9.]+[mµn]?s`)
	for _, line := range said {
		if negative.MatchString(line) || !strings.Contains(line, "no follow-up probes: they were due until") && !strings.Contains(line, "once the run's requests have aged out") {
			t.Errorf("line %q, want no follow-up probes said due before the analysis ended", line)
		}
	}
	for k := range send {
		if strings.HasSuffix(k, "/"+method.StreamFollowUp) {
			t.Errorf("follow-up probes %s sent after their planned end", k)
		}
	}
}
