package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// tally counts the archived answers of one surface, or of one address or
// stream on it, by what the analyzer calls them: only a 2xx is admitted,
// only a 429 refused; a transport error or 5xx is a fault; the rest are
// other answers.
type tally struct{ requests, admitted, refused, faults, other int }

func (c *tally) add(r *vegeta.Result) {
	c.requests++
	switch {
	case r.Code >= 200 && r.Code <= 299:
		c.admitted++
	case r.Code == 429:
		c.refused++
	case r.Code == 0 || r.Code >= 500:
		c.faults++
	default:
		c.other++
	}
}

// answered is how many were admitted or refused.
func (c tally) answered() int { return c.admitted + c.refused }

// archiveCounts tallies the results of a run per surface, per surface and
// source, and per surface and stream.
type archiveCounts struct {
	surface map[string]*tally
	sources map[[2]string]*tally
	streams map[[2]string]*tally
	rows    map[string]int // per surface, the failure-table probes (streams named for it, such as rest-not-found)
}

func countArchive(rs []vegeta.Result) archiveCounts {
	c := archiveCounts{surface: map[string]*tally{}, sources: map[[2]string]*tally{}, streams: map[[2]string]*tally{}, rows: map[string]int{}}
	get := func(m map[[2]string]*tally, k [2]string) *tally {
		if m[k] == nil {
			m[k] = &tally{}
		}
		return m[k]
	}
	for i := range rs {
		r := &rs[i]
		l := archive.ParseLabel(r.Attack, r.URL)
		if c.surface[l.Surface] == nil {
			c.surface[l.Surface] = &tally{}
		}
		c.surface[l.Surface].add(r)
		get(c.sources, [2]string{l.Surface, l.Source}).add(r)
		get(c.streams, [2]string{l.Surface, l.Stream}).add(r)
		if strings.HasPrefix(l.Stream, l.Surface+"-") {
			c.rows[l.Surface]++
		}
	}
	return c
}

// spoofHeader names the header each spoof stream forges.
var spoofHeader = map[string]string{"spoof-x-forwarded-for": "X-Forwarded-For", "spoof-forwarded": "Forwarded", "spoof-x-real-ip": "X-Real-IP"}

// evidenceClaims are the counts a check's detail states, each with what it
// must equal (or not exceed) when recomputed from results.bin: a pattern
// of the detail, and a function of its submatches (the surface's counts
// in c, m[1] the first submatch) that returns the claims it makes.
var evidenceClaims = []struct {
	check string
	re    *regexp.Regexp
	claim func(c surfaceCounts, m []string) []evidenceClaim
}{
	{"shape", regexp.MustCompile(`^all (\d+) refusals carry`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals", atoi(m[1]), c.all.refused, false}}
	}},
	{"shape", regexp.MustCompile(`^(\d+) of (\d+) refusals lack`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals", atoi(m[2]), c.all.refused, false}, {"refusals lacking the shape", atoi(m[1]), atoi(m[2]), true}}
	}},
	{"shape", regexp.MustCompile(`^no 429 to inspect`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals", 0, c.all.refused, false}}
	}},
	{"rolling", regexp.MustCompile(`^(\d+) requests from (\S+): 0 leaks, 0 false throttles \((\d+) indeterminate\)`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"judged requests", atoi(m[1]), c.from(m[2]).answered(), false}, {"indeterminate", atoi(m[3]), atoi(m[1]), true}}
	}},
	{"rolling", regexp.MustCompile(`(\d+) leaks?, (\d+) false throttles? \(`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"leaks", atoi(m[1]), c.from(c.primary).admitted, true}, {"false throttles", atoi(m[2]), c.from(c.primary).refused, true}}
	}},
	{"rolling", regexp.MustCompile(`admitted with (\d+) others surely in its window: (\d+) admitted, (\d+) refused`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"others in the window", atoi(m[1]), atoi(m[2]) + atoi(m[3]), false}}
	}},
	{"headers", regexp.MustCompile(`none of the (\d+) answers to (\S+) carried`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"answers", atoi(m[1]), c.from(m[2]).answered(), false}}
	}},
	{"isolation", regexp.MustCompile(`^(\d+) requests from other addresses were admitted while (\S+) was`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"admitted from other addresses", atoi(m[1]), c.all.admitted - c.from(m[2]).admitted, true}}
	}},
	{"isolation", regexp.MustCompile(`^another address shares the budget of (\S+): (\d+) requests? refused`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refused from other addresses", atoi(m[2]), c.all.refused - c.from(m[1]).refused, true}}
	}},
	{"rejected-count", regexp.MustCompile(`^(\d+) refusals are explained`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals explained", atoi(m[1]), c.from(c.primary).refused, true}}
	}},
	{"rejected-count", regexp.MustCompile(`^(\d+) requests were admitted while refused requests filled`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"admissions past the window", atoi(m[1]), c.from(c.primary).admitted, true}}
	}},
	{"onset", regexp.MustCompile(`^no 429 at all from (\S+) although (\d+) requests provably exceeded`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals", 0, c.from(m[1]).refused, false}, {"requests past the limit", atoi(m[2]), c.from(m[1]).answered(), true}}
	}},
	{"onset", regexp.MustCompile(`^from (\S+) (\d+) requests sent a window or more after it began were refused`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"early refusals", atoi(m[2]), c.from(m[1]).refused, true}}
	}},
	{"onset", regexp.MustCompile(`^from (\S+) (\d+) requests? (?:was|were) admitted past the limit`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"admitted past the limit", atoi(m[2]), c.from(m[1]).admitted, true}}
	}},
	{"independence", regexp.MustCompile(`^(\d+) refusals the other surface's traffic could explain`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals", atoi(m[1]), c.from(c.primary).refused, true}}
	}},
	{"independence", regexp.MustCompile(`^(\d+) refusals? on \S+ from (\S+) would be explained`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals", atoi(m[1]), c.from(m[2]).refused, true}}
	}},
	{"independence", regexp.MustCompile(`^nothing from (\S+) was refused`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"refusals", 0, c.from(m[1]).refused, false}}
	}},
	{"spoof", regexp.MustCompile(`^none of the spoof probes from (\S+) was refused`), func(c surfaceCounts, m []string) []evidenceClaim {
		n := 0
		for st := range spoofHeader {
			n += c.stream(st).refused
		}
		return []evidenceClaim{{"refused spoof probes", 0, n + c.stream("spoof-control").refused, false}}
	}},
	{"contract", regexp.MustCompile(`^all (\d+) failure-table rows answer`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"failure-table rows", atoi(m[1]), c.rows, false}}
	}},
	{"contract", regexp.MustCompile(`^(\d+) of (\d+) rows wrong`), func(c surfaceCounts, m []string) []evidenceClaim {
		return []evidenceClaim{{"failure-table rows", atoi(m[2]), c.rows, false}, {"rows wrong", atoi(m[1]), atoi(m[2]), true}}
	}},
}

// surfaceCounts are the archive's counts of one surface, and its limit
// address (as the verdict names it, "127.0.0.1" when none does).
type surfaceCounts struct {
	archiveCounts
	surface, primary string
	all              tally
	rows             int
}

// from is the tally of one address on the surface.
func (c surfaceCounts) from(addr string) tally {
	if t := c.sources[[2]string{c.surface, addr}]; t != nil {
		return *t
	}
	return tally{}
}

// stream is the tally of one stream on the surface.
func (c surfaceCounts) stream(name string) tally {
	if t := c.streams[[2]string{c.surface, name}]; t != nil {
		return *t
	}
	return tally{}
}

// evidenceClaim is one count a detail states against its recomputation.
type evidenceClaim struct {
	what             string
	stated, computed int
	atMost           bool // stated may be below computed (a subset of it)
}

var (
	fromAddr    = regexp.MustCompile(`\bfrom (\d+\.\d+\.\d+\.\d+|[0-9a-f]*:[0-9a-f:]+)`)
	fullest     = regexp.MustCompile(`the fullest window ending at a 429 admitted (\d+) \(observed_limit\), (\d+) past the limit`)
	spoofAlike  = regexp.MustCompile(`(X-Forwarded-For|Forwarded|X-Real-IP) \((\d+) of (\d+)\)`)
	spoofPlain  = regexp.MustCompile(`the (\d+) plain probes from (\S+) in the same span \((\d+) admitted`)
	spoofFailed = regexp.MustCompile(`(X-Forwarded-For|Forwarded|X-Real-IP) \((\d+) of (\d+) admitted against (\d+) of (\d+) plain`)
	spoofWeak   = regexp.MustCompile(`(X-Forwarded-For|Forwarded|X-Real-IP) \((\d+) forged, (\d+) plain of which (\d+) refused`)
)

// checkEvidence recomputes from a run's results rs every count that the
// verdict states (each surface's requests and how they were answered) and
// every count of a check's detail that the archive alone fixes. It returns
// how many counts it held, those that do not add up, and the checks whose
// detail states none.
func checkEvidence(rs []vegeta.Result, v verdictJSON) (held int, wrong, none []string) {
	ac := countArchive(rs)
	hold := func(surface, check string, cl evidenceClaim, detail string) {
		held++
		if cl.stated != cl.computed && !(cl.atMost && cl.stated < cl.computed) {
			rel := "="
			if cl.atMost {
				rel = "≤"
			}
			wrong = append(wrong, fmt.Sprintf("%s/%s states %d %s, results.bin gives %d (want stated %s it): %s", surface, check, cl.stated, cl.what, cl.computed, rel, detail))
		}
	}
	for _, s := range v.Surfaces {
		c := surfaceCounts{archiveCounts: ac, surface: s.Surface, primary: "127.0.0.1", rows: ac.rows[s.Surface]}
		if n := ac.surface[s.Surface]; n != nil {
			c.all = *n
		}
		for _, ch := range s.Checks {
			if m := fromAddr.FindStringSubmatch(ch.Detail); m != nil {
				c.primary = m[1]
				break
			}
		}
		n := c.all
		for _, cl := range []evidenceClaim{{"requests", s.Requests, n.requests, false}, {"admitted", s.Admitted, n.admitted, false},
			{"refused", s.Refused, n.refused, false}, {"faults", s.Faults, n.faults, false}, {"other answers", s.OtherAnswers, n.other, false},
			{"requests, as admitted + refused + faults + other answers", s.Requests, s.Admitted + s.Refused + s.Faults + s.OtherAnswers, false}} {
			hold(s.Surface, "counts", cl, "")
		}
		for _, ch := range s.Checks {
			before := held
			for _, ec := range evidenceClaims {
				if ec.check != ch.Name {
					continue
				}
				for _, m := range ec.re.FindAllStringSubmatch(ch.Detail, -1) {
					for _, cl := range ec.claim(c, m) {
						hold(s.Surface, ch.Name, cl, ch.Detail)
					}
				}
			}
			switch ch.Name {
			case "onset":
				if m := fullest.FindStringSubmatch(ch.Detail); m != nil {
					obs, past := atoi(m[1]), atoi(m[2])
					hold(s.Surface, "onset", evidenceClaim{"observed_limit, as the limit plus those past it", obs, s.ExpectedLimit + past, false}, ch.Detail)
					if s.ObservedLimit != nil {
						hold(s.Surface, "onset", evidenceClaim{"observed_limit, as the verdict's", obs, *s.ObservedLimit, false}, ch.Detail)
					}
				}
			case "spoof":
				plain := c.stream("spoof-control")
				for _, m := range spoofAlike.FindAllStringSubmatch(ch.Detail, -1) {
					f := c.stream(streamOfHeader(m[1]))
					hold(s.Surface, "spoof", evidenceClaim{m[1] + " probes admitted", atoi(m[2]), f.admitted, false}, ch.Detail)
					hold(s.Surface, "spoof", evidenceClaim{m[1] + " probes answered", atoi(m[3]), f.answered(), false}, ch.Detail)
				}
				if m := spoofPlain.FindStringSubmatch(ch.Detail); m != nil {
					hold(s.Surface, "spoof", evidenceClaim{"plain probes answered", atoi(m[1]), plain.answered(), false}, ch.Detail)
					hold(s.Surface, "spoof", evidenceClaim{"plain probes admitted", atoi(m[3]), plain.admitted, false}, ch.Detail)
				}
				for _, m := range spoofFailed.FindAllStringSubmatch(ch.Detail, -1) {
					f := c.stream(streamOfHeader(m[1]))
					for _, cl := range []evidenceClaim{{m[1] + " probes admitted", atoi(m[2]), f.admitted, false}, {m[1] + " probes answered", atoi(m[3]), f.answered(), false},
						{"plain probes admitted", atoi(m[4]), plain.admitted, false}, {"plain probes answered", atoi(m[5]), plain.answered(), false}} {
						hold(s.Surface, "spoof", cl, ch.Detail)
					}
				}
				for _, m := range spoofWeak.FindAllStringSubmatch(ch.Detail, -1) {
					f := c.stream(streamOfHeader(m[1]))
					for _, cl := range []evidenceClaim{{m[1] + " probes answered", atoi(m[2]), f.answered(), false},
						{"plain probes answered", atoi(m[3]), plain.answered(), false}, {"plain probes refused", atoi(m[4]), plain.refused, false}} {
						hold(s.Surface, "spoof", cl, ch.Detail)
					}
				}
			}
			if held == before && ch.Verdict != "skip" {
				none = append(none, fmt.Sprintf("%s/%s %s: %s", s.Surface, ch.Name, ch.Verdict, ch.Detail))
			}
		}
	}
	return held, wrong, none
}

// streamOfHeader is the spoof stream forging header h.
func streamOfHeader(h string) string {
	for s, x := range spoofHeader {
		if x == h {
			return s
		}
	}
	return ""
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestEvidenceOfReadmeRun: every count the README's real run states adds
// up from its results.bin, and a count changed in a detail that states an
// exact one (not a bound, such as isolation's "admitted while …") does not.
func TestEvidenceOfReadmeRun(t *testing.T) {
	t.Parallel()
	dirs, _ := filepath.Glob(filepath.Join("testdata", "readme-run", "*-verify"))
	if len(dirs) != 1 {
		t.Fatalf("testdata/readme-run holds %v, want one verify run folder", dirs)
	}
	code, stdout, stderr := runCmd(t, "analyze", "--json", dirs[0])
	if code != exitOK {
		t.Fatalf("analyze: exit %d\n%s", code, stderr)
	}
	var v verdictJSON
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	v.Run = dirs[0]
	holdsEvidence(t, v)
	rs, _ := readArchive(t, v.Run)
	tampered := 0
	for i, c := range v.Surfaces[0].Checks {
		exact := map[string]bool{"shape": true, "rolling": true, "headers": true, "contract": true}
		if loc := regexp.MustCompile(`\b\d+\b`).FindStringIndex(c.Detail); loc != nil && exact[c.Name] {
			v.Surfaces[0].Checks[i].Detail = c.Detail[:loc[0]] + strconv.Itoa(atoi(c.Detail[loc[0]:loc[1]])+1) + c.Detail[loc[1]:]
			if _, wrong, _ := checkEvidence(rs, v); len(wrong) == 0 {
				t.Errorf("%s's detail with its first count one higher held: %s", c.Name, v.Surfaces[0].Checks[i].Detail)
			}
			tampered++
			v.Surfaces[0].Checks[i].Detail = c.Detail
		}
	}
	if tampered < 4 {
		t.Errorf("tampered with %d details: the README run's REST checks state fewer exact counts than expected", tampered)
	}
}

// holdsEvidence fails t on every count of v that its run's results.bin
// does not bear out, and when no check's detail stated a count it could
// hold.
func holdsEvidence(t *testing.T, v verdictJSON) {
	t.Helper()
	rs, _ := readArchive(t, v.Run)
	n, wrong, none := checkEvidence(rs, v)
	for _, w := range wrong {
		t.Error(w)
	}
	t.Logf("held %d counts of the verdict and its checks against results.bin; no count stated by %d checks", n, len(none))
	if n <= 6*len(v.Surfaces) {
		t.Errorf("held %d counts, only the surfaces' own: no check's detail stated a count results.bin fixes", n)
	}
}
