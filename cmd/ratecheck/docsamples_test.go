package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// updateDocs rewrites the docs' sample outputs from their archived runs
// instead of checking them.
var updateDocs = flag.Bool("update-docs", false, "rewrite the sample outputs of docs/*.md from the runs under testdata/doc-runs")

// sampleMark is the line before a fenced block of docs/*.md that is a
// sample output: the ratecheck command that prints it, over a run
// archived under testdata/doc-runs (a real run, kept as it was made).
var sampleMark = regexp.MustCompile("(?m)^<!-- sample: ratecheck (.+) -->\n\n?```\n")

// TestDocSamples: every sample output in docs/ that names its command is
// what ratecheck prints today for the archived real run behind it, with
// the run's folder shown as results/. So a sample cannot go stale when a
// message changes: go test ./cmd/ratecheck -run TestDocSamples
// -update-docs rewrites them, and a new real run may replace a folder.
func TestDocSamples(t *testing.T) {
	t.Parallel()
	pages, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	samples := 0
	for _, page := range pages {
		rel, _ := filepath.Rel(repoRoot, page)
		doc := readDoc(t, rel)
		out, changed := "", false
		last := 0
		for _, m := range sampleMark.FindAllStringSubmatchIndex(doc, -1) {
			samples++
			args := strings.Fields(doc[m[2]:m[3]])
			for _, a := range args {
				if strings.HasPrefix(a, "testdata/") {
					if _, err := os.Stat(a); err != nil {
						t.Errorf("%s: the sample's run %s: %v", rel, a, err)
					}
				}
			}
			from := m[1]
			end := strings.Index(doc[from:], "```")
			if end < 0 {
				t.Fatalf("%s: the sample after %q has no closing fence", rel, doc[m[0]:m[1]])
			}
			to := from + end
			code, stdout, stderr := runCmd(t, args...)
			if code != exitOK && code != exitCheckFailed && code != exitInconclusive {
				t.Errorf("%s: ratecheck %s: exit %d\n%s", rel, strings.Join(args, " "), code, stderr)
				continue
			}
			want := strings.ReplaceAll(stdout, filepath.Join("testdata", "doc-runs")+string(filepath.Separator), "results/")
			if *updateDocs {
				out += doc[last:from] + want
				last, changed = to, true
				continue
			}
			if got := doc[from:to]; got != want {
				t.Errorf("%s: the sample of `ratecheck %s` is not what it prints today (go test ./cmd/ratecheck -run TestDocSamples -update-docs rewrites it):\n--- %s\n%s--- ratecheck\n%s",
					rel, strings.Join(args, " "), rel, got, want)
			}
		}
		if changed {
			if err := os.WriteFile(page, []byte(out+doc[last:]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if samples == 0 {
		t.Error("no sample output in docs/ names its command and run (<!-- sample: ratecheck … -->)")
	}
}
