package main

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/profiles"
)

// TestEveryStreamIsJudged pairs every stream the tool sends — of the
// shipped profiles and of verify's plan — with what judges it in the
// analyzer, so that renaming a stream on one side cannot silently turn a
// check off: every failure-table probe has its contract row (and every row
// its probe), verify's forged-header probes are the spoof check's, and no
// other profile borrows a name the analyzer keys on.
func TestEveryStreamIsJudged(t *testing.T) {
	t.Parallel()
	rows := map[string]method.ContractRow{}
	for _, r := range method.ContractRows {
		rows[r.Surface+"/"+r.Stream] = r
	}
	errs, err := scenario.LoadEmbedded("errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	probed := map[string]bool{}
	for _, s := range errs.Streams {
		key := s.Surface + "/" + s.Name
		if _, ok := rows[key]; !ok || method.JudgedBy(s.Name) != "contract" {
			t.Errorf("profiles/errors.yaml: stream %s is sent but judged by no contract row", key)
		}
		probed[key] = true
	}
	for key, r := range rows {
		if !probed[key] && !r.Retired {
			t.Errorf("contract row %s has no probe in profiles/errors.yaml", key)
		}
	}

	plan, err := scenario.VerifyProfile(scenario.VerifyOptions{RESTLimit: 240, MCPLimit: 120, Sources: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"},
		Limits: true, Isolation: true, Contract: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{method.StreamOnset: "limits", method.StreamOver: "limits", method.StreamFlood: "limits",
		method.StreamProbe: "limits", method.StreamEdge: "limits", method.StreamSecond: "limits", method.StreamIsolation: "limits", method.StreamRebound: "limits", method.StreamSpoofXForwardedFor: "spoof", method.StreamSpoofForwarded: "spoof", method.StreamSpoofXRealIP: "spoof", method.StreamSpoofControl: "limits"}
	for _, s := range plan.Streams {
		w, ok := want[s.Name]
		if !ok {
			w = "contract"
		}
		if got := method.JudgedBy(s.Name); got != w {
			t.Errorf("verify's stream %s/%s is judged by %q, want %q", s.Surface, s.Name, got, w)
		}
		if w == "contract" && rows[s.Surface+"/"+s.Name].Stream == "" {
			t.Errorf("verify's stream %s/%s has no contract row", s.Surface, s.Name)
		}
	}

	names, err := fs.Glob(profiles.FS, "*.yaml")
	if err != nil || len(names) < 2 {
		t.Fatalf("shipped profiles: %v %v", names, err)
	}
	for _, name := range names {
		if name == "errors.yaml" {
			continue
		}
		p, err := scenario.LoadEmbedded(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Streams {
			if got := method.JudgedBy(s.Name); got != "limits" {
				t.Errorf("profiles/%s: stream %s borrows a name the analyzer keys on (%s)", name, s.Name, got)
			}
			if slices.Contains([]string{"rest", "mcp"}, s.Surface) && strings.TrimSpace(s.Name) == "" {
				t.Errorf("profiles/%s: a stream without a name", name)
			}
		}
	}
}
