package analyze

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamiealquiza/tachymeter"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Verdicts of checks, surfaces and runs. A check is skipped when it was
// not selected or does not apply to the run (one source address, say),
// and inconclusive when it was selected but the run did not produce the
// evidence it needs; a surface or run with an inconclusive check and no
// failure is inconclusive, never a pass.
const (
	Pass         = "pass"
	Fail         = "fail"
	Skip         = "skip"
	Inconclusive = "inconclusive"
)

// Config says what the results are judged against.
type Config struct {
	// Window is the documented window (the run's, when compressed).
	Window time.Duration
	// Limits are the documented limits per surface.
	Limits map[string]int
	// Checks selects checks by name; nil means all.
	Checks []string
	// Target and Run are reported as given.
	Target, Run string
	// Refusals are how the refusals of a contract's limits look, by limit
	// name (the surfaces verify --contract names after them); the input is
	// to be read with the same (ReadFor). nil: the documented API's.
	Refusals map[string]Refusal
	// Surfaces, when set, are the surfaces the run was meant to exercise:
	// one of them without a request is inconclusive, not left out.
	Surfaces []string
	// MCPRevision is the MCP protocol revision the run spoke, reported
	// with the MCP surface.
	MCPRevision string
	// Warnings are said before the analysis's own (such as a window
	// assumed for lack of run.json).
	Warnings []string
	// SentBefore, when set, is when an earlier run last sent from the
	// run's addresses, within a window of its start: a refusal whose
	// window may hold those requests can be that earlier run's doing.
	SentBefore time.Time
	// Stacked are the limits of a contract stacked on others, by name
	// (each also in Surfaces): each is held to a route beside a limit of a
	// shorter window that verify probes, and judged at its own window
	// (Windows). One the run sent no
	// stream of its own is inconclusive, saying whether the run reached
	// it; one it did (method.StreamStacked) is judged on its onset and
	// shape, the rest left open (see Stacked).
	Stacked map[string]Stacked
	// Keys say, by surface, what a contract's limit counts by when it is
	// not the client address: "header NAME" (an API key: its requests
	// are labelled by key, source "key:NAME", see archive.KeySource) or
	// "global" (one budget for everybody: source archive.GlobalSource).
	// Isolation then proves that is what is counted (see isolationCheck).
	Keys map[string]string
	// Routes are, by surface, the routes of a contract's limit over
	// several, a budget they share, in the contract's order: verify
	// probes the first, and sends the others among the spoof probes
	// (method.SharedRouteStream), which independence judges.
	Routes map[string][]string
	// RefusalsCount says, by surface, what a contract's limit says of
	// whether refused requests count: "true", "false" or "" (it does not
	// say: rejected-count reports what it finds as a skip). A surface
	// not in it is held to the documented API's: they count.
	RefusalsCount map[string]string
	// Windows are, by surface, the windows of a contract's limits longer
	// than the run's (Window, the shortest of the limits verify probes),
	// stacked ones too: each is judged at its own, and its verdict says it.
	Windows map[string]time.Duration
	// Families are, by surface, the limiter a contract's limit documents
	// when it is not a sliding log: rolling and onset then hold the limit
	// to it (see Family). A surface not in it is held to a rolling window.
	Families map[string]Family
	// Charts keeps what the HTML report's window chart draws of each
	// surface (SurfaceDetail.Window): a point per answered request of the
	// primary address, a run's worth of them. Without it the analysis
	// holds about a window of records at a time.
	Charts bool
}

// Verdict is the machine-readable verdict, schema 1 (docs/schema/verdict.json).
type Verdict struct {
	Schema   int              `json:"schema"`
	Verdict  string           `json:"verdict"`
	Target   string           `json:"target"`
	WindowMS clock.Millis     `json:"window_ms"`
	Run      string           `json:"run"`
	Surfaces []SurfaceVerdict `json:"surfaces"`
}

// SurfaceVerdict is the verdict of one surface.
type SurfaceVerdict struct {
	Surface       string `json:"surface"`
	ExpectedLimit int    `json:"expected_limit"`
	ObservedLimit *int   `json:"observed_limit"`
	Model         string `json:"model"`
	// ModelAlternatives are the other limiter families that explain the
	// run exactly as well as Model (the run cannot tell them apart).
	ModelAlternatives []string `json:"model_alternatives"`
	// ModelReplicas is how many limiters of the model stand behind the
	// target: 1 for one, k (2 to 4) for replicas behind a balancer that
	// assigns requests unpredictably; 0 when the model is none or unknown.
	ModelReplicas int `json:"model_replicas"`
	// ModelDecided says the model won by a margin the run's timing cannot
	// produce (no alternative); false for an unknown model.
	ModelDecided  bool  `json:"model_decided"`
	RejectedCount *bool `json:"rejected_count"`
	// MCPRevision is the MCP protocol revision spoken (mcp only).
	MCPRevision string `json:"mcp_revision,omitempty"`
	// WindowMS is the surface's own window where it is not the run's
	// (Config.Windows, a stacked limit's; 0: the run's).
	WindowMS clock.Millis `json:"window_ms,omitempty"`
	Verdict  string       `json:"verdict"`
	// Missing says what evidence the run did not produce and why: for an
	// inconclusive surface, and for one whose checks the run's premise
	// left unjudged (said here once; those checks say only that).
	Missing string `json:"missing,omitempty"`
	// Timing, when the run's timing left open what it decides (the family,
	// or a check of the limit), says how long the limit address's answers
	// took against the window, and what would decide it.
	Timing string `json:"timing,omitempty"`
	// The counts the table shows: requests sent, admitted (2xx), refused
	// (429), faults (no answer or 5xx), other answers (any other status),
	// and answered requests whose outcome the timing left indeterminate.
	Requests      int `json:"requests"`
	Admitted      int `json:"admitted"`
	Refused       int `json:"refused"`
	Faults        int `json:"faults"`
	OtherAnswers  int `json:"other_answers"`
	Indeterminate int `json:"indeterminate"`
	// Latency summarizes every request's latency.
	Latency LatencySummary `json:"latency"`
	Checks  []Check        `json:"checks"`
}

// LatencySummary is the latency of a surface's requests, in milliseconds.
type LatencySummary struct {
	Count int          `json:"count"`
	MinMS clock.Millis `json:"min_ms"`
	P50MS clock.Millis `json:"p50_ms"`
	P95MS clock.Millis `json:"p95_ms"`
	P99MS clock.Millis `json:"p99_ms"`
	MaxMS clock.Millis `json:"max_ms"`
}

// Check is one check's verdict and evidence.
type Check struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

// Report is a verdict and what a person needs beside it.
type Report struct {
	Verdict Verdict
	// Surfaces holds, per surface in the verdict's order, the evidence that
	// does not fit schema 1.
	Surfaces []SurfaceDetail
	// Start is when the run's first request of either surface was sent:
	// the origin of FollowUps' times.
	Start time.Time
	// Notes describe the input (such as the shards merged); Warnings say
	// what may make the verdict less than it seems.
	Notes, Warnings []string
}

// SurfaceDetail is the evidence behind a surface's verdict.
type SurfaceDetail struct {
	Requests, Admitted, Refused, Faults, OtherAnswers int
	Required200, Required429, Indet                   int
	Leaks, FalseThrottles                             int
	// Errors counts the transport errors of results without an answer,
	// by kind (the text after the error's last colon), most frequent first.
	Errors  []ErrorCount
	Fit     Fit
	Latency *tachymeter.Metrics
	Sources []string
	// Primary is the source whose requests decided the limit checks: the
	// one with the most refusals.
	Primary string
	// Window is the primary's requests as the window chart draws them,
	// when Config.Charts asked for them (nil otherwise, and for a surface
	// without a request).
	Window *WindowSeries
	// Premise, when set, is why the run could not show the limiter at
	// all (no request, none answered, no API there, a budget spent before
	// the run): more probes do not settle it.
	Premise string
	// Absent is set when the API is not there: the limit probes got 404,
	// 405, 501 or non-JSON answers and no admission or refusal.
	Absent bool
	// SecondEnd is when the plan's second burst from the primary went out
	// last (zero: the run has none): the follow-up is timed from it
	// (FollowUps), however late a busy host sent it.
	SecondEnd time.Time
	// SpentOrLower is set when the premise is the primary's first burst
	// refused early and nothing in the run told a budget spent before it
	// from a limit below the documented one: the follow-up burst, once
	// every request of the run has aged out, does (FollowUps).
	SpentOrLower bool
	// OnsetOnly, for a stacked limit the run probed by its onset alone,
	// says why its other checks are left open: no follow-up settles them.
	OnsetOnly string
}

// ErrorCount is how many results failed with one kind of transport error.
type ErrorCount struct {
	Kind string
	N    int
}

// Analyze judges an input held in memory against cfg (see AnalyzeSource).
func Analyze(in *decode.Input, cfg Config) (*Report, error) {
	return AnalyzeSource(in, cfg)
}

// AnalyzeSource judges src against cfg in three passes over its records.
// The first counts each group (a surface and a source address) and picks
// each surface's primary group: the one the limit probes came from, with
// the most refusals. The second, in send order, runs the windowed model
// of every group and the observed limit of the primaries, and takes the
// boundaries a fixed window could start at from the data. The third fits
// the limiter families to the primaries at the documented and the observed
// limit. Each holds about one window of records at a time. A source with
// no request of either surface is an error (not results of this API).
func AnalyzeSource(src decode.Source, cfg Config) (*Report, error) {
	meta := src.Info()
	rep := &Report{Verdict: Verdict{Schema: 1, Verdict: Pass, Target: cfg.Target, WindowMS: clock.WholeMs(cfg.Window), Run: cfg.Run}}
	rep.Warnings = append(append(slices.Clone(cfg.Warnings), meta.Truncated...), meta.Notes...)
	notes, warnings := mergeNotes(meta, cfg.Window)
	rep.Notes = notes
	rep.Warnings = append(rep.Warnings, warnings...)

	// Each surface is judged by a worker of its own, side by side: both see
	// every record and take theirs (and, for the independence check, the
	// other surface's from their primary's source).
	tab := src.Tables()
	var workers []*surfaceRun
	for _, name := range surfacesOf(meta, cfg) {
		workers = append(workers, newSurfaceRun(name, cfg, tab))
	}
	err := fanOut(src.Each, workers, func(s *surfaceRun, r *decode.Record, seq int) {
		if g := s.groupOf(r, true); g != nil {
			s.count(g, r, seq)
		}
	})
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(workers, func(s *surfaceRun) bool { return len(s.groups) > 0 }) {
		return nil, foreignInput(meta)
	}
	for _, s := range workers {
		s.choosePrimary(workers)
	}
	err = fanOut(src.InOrder, workers, func(s *surfaceRun, r *decode.Record, _ int) {
		switch g := s.groupOf(r, false); {
		case g == nil:
		case g.surface == s:
			g.add(r)
		default: // another surface's, from the primary's source
			s.addOther(r)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, s := range workers {
		s.endModels()
	}
	// The third pass replays each fit (a surface's limit address, and its
	// second address) by a worker of its own, handed only its group's
	// records: the fits share nothing, and the limit address's and the
	// second's of one surface are most of the pass's work, which one worker
	// a surface left to one core.
	var fits []*fitRun
	for _, s := range workers {
		fits = append(fits, s.fitRuns()...)
	}
	err = routeOut(src.InOrder, fits, fitOf(fits), (*fitRun).take)
	if err != nil {
		return nil, err
	}
	t0 := int64(1<<63 - 1)
	for _, s := range workers {
		t0 = min(t0, s.t0)
	}
	if t0 != 1<<63-1 {
		rep.Start = time.Unix(0, t0)
	}
	for _, s := range workers {
		if st, ok := cfg.Stacked[s.name]; ok {
			i := slices.IndexFunc(workers, func(o *surfaceRun) bool { return o.name == st.On })
			var on *surfaceRun
			if i >= 0 {
				on = workers[i]
			}
			if s.primary == nil {
				s.unreached = s.unreachedBy(on, st)
			} else {
				s.onsetOnly = s.onsetOnlyBy(st)
			}
		}
	}
	for _, s := range workers {
		if len(s.groups) == 0 && !slices.Contains(cfg.Surfaces, s.name) {
			continue
		}
		sv, sd := s.verdict(meta)
		rep.Verdict.Surfaces = append(rep.Verdict.Surfaces, sv)
		rep.Surfaces = append(rep.Surfaces, sd)
		rep.Verdict.Verdict = Worse(rep.Verdict.Verdict, sv.Verdict)
	}
	return rep, nil
}

// surfacesOf are the surfaces a run is judged on: the documented API's
// rest and mcp, then those cfg names and the run folders' streams were
// labelled with (verify --contract labels them with its limits' names),
// each once, in that order.
func surfacesOf(meta *decode.Meta, cfg Config) []string {
	names := []string{method.REST, method.MCP}
	add := func(n string) {
		if n != "" && n != "both" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range cfg.Surfaces {
		add(n)
	}
	for _, r := range meta.Runs {
		for _, st := range r.Streams {
			add(st.Surface)
		}
	}
	return names
}

// Worse returns the worse of two verdicts: fail, then inconclusive, then
// pass.
func Worse(a, b string) string {
	rank := map[string]int{Pass: 0, Skip: 0, Inconclusive: 1, Fail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// foreignError is input that holds no request to either surface: results
// of another API, or not results at all.
type foreignError struct{ What string }

func (e *foreignError) Error() string { return e.What }

// foreignInput says what a source with no request of either surface holds.
func foreignInput(meta *decode.Meta) error {
	files := strings.Join(meta.Files, ", ")
	for _, s := range meta.Samples {
		if s.Path != "" {
			return &foreignError{fmt.Sprintf("%s: no request to /api/public/ or /mcp: results of another API (the first is %d from %s), not of this contract", files, s.Code, s.Path)}
		}
	}
	return &foreignError{fmt.Sprintf("%s: no request to /api/public/ or /mcp: nothing to judge against this contract", files)}
}

func limitOf(cfg Config, surface string) int {
	if l := cfg.Limits[surface]; l > 0 {
		return l
	}
	return method.Limit(surface)
}

// at formats a record's send time relative to t0.
func at(r *decode.Record, t0 int64) string {
	return "+" + time.Duration(r.Start-t0).Round(time.Millisecond).String()
}

// fanOut runs each over the source's records and hands them, in batches,
// to one goroutine per worker (a surface, or a fit), which calls take with
// its place in the stream. It returns once every worker is done.
func fanOut[W any](each func(func(*decode.Record)) error, workers []W, take func(w W, r *decode.Record, seq int)) error {
	type batch struct {
		recs []decode.Record
		seq  int
		left atomic.Int32
	}
	// 8 batches of 1024 records: 256 KB in all, and a handful of channel
	// operations per thousand records.
	const size = 1024
	free := make(chan *batch, 8)
	for range cap(free) {
		free <- &batch{recs: make([]decode.Record, 0, size)}
	}
	chans := make([]chan *batch, len(workers))
	var wg sync.WaitGroup
	for i, s := range workers {
		chans[i] = make(chan *batch, cap(free))
		wg.Go(func() {
			for b := range chans[i] {
				for k := range b.recs {
					take(s, &b.recs[k], b.seq+k)
				}
				if b.left.Add(-1) == 0 {
					free <- b
				}
			}
		})
	}
	b, seq := <-free, 0
	send := func() {
		b.seq = seq
		seq += len(b.recs)
		b.left.Store(int32(len(workers)))
		for _, c := range chans {
			c <- b
		}
		b = <-free
		b.recs = b.recs[:0]
	}
	err := each(func(r *decode.Record) {
		if b.recs = append(b.recs, *r); len(b.recs) == size {
			send()
		}
	})
	if len(b.recs) > 0 {
		send()
	}
	for _, c := range chans {
		close(c)
	}
	wg.Wait()
	return err
}

// routeOut runs each over the source's records and hands each, in
// batches, to the one goroutine of the worker route names (-1: none). It
// returns once every worker is done.
func routeOut[W any](each func(func(*decode.Record)) error, workers []W, route func(*decode.Record) int, take func(w W, r *decode.Record)) error {
	// 4 batches of 1024 records a worker, as fanOut's 8 for all.
	const size = 1024
	free := make(chan []decode.Record, 4*len(workers))
	for range cap(free) {
		free <- make([]decode.Record, 0, size)
	}
	chans := make([]chan []decode.Record, len(workers))
	cur := make([][]decode.Record, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		chans[i] = make(chan []decode.Record, cap(free))
		cur[i] = <-free
		wg.Go(func() {
			for b := range chans[i] {
				for k := range b {
					take(w, &b[k])
				}
				free <- b[:0]
			}
		})
	}
	err := each(func(r *decode.Record) {
		if i := route(r); i >= 0 {
			if cur[i] = append(cur[i], *r); len(cur[i]) == size {
				chans[i] <- cur[i]
				cur[i] = <-free
			}
		}
	})
	for i, c := range chans {
		if len(cur[i]) > 0 {
			c <- cur[i]
		}
		close(c)
	}
	wg.Wait()
	return err
}

// APIAbsent reports whether the API is absent from the target: absent
// from a surface judged, and every other surface either absent too or
// without a single answer (every request a transport error: a server
// without the API whose listen backlog dropped the burst says nothing of
// a surface it never answered, and the one it did answer says it is the
// wrong server).
func (rep *Report) APIAbsent() bool {
	absent := false
	for _, d := range rep.Surfaces {
		switch {
		case d.Absent:
			absent = true
		case d.Admitted+d.Refused+d.OtherAnswers > 0:
			return false
		}
	}
	return absent
}
