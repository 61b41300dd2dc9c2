package history

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Embedded is the target every run against the embedded reference target
// is grouped under: it listens on a fresh port each time, so its address
// names no target.
const Embedded = "embedded"

// BuiltinContract names the documented API's limits contract, the one a
// run whose run.json records no other was made against.
const BuiltinContract = archive.BuiltinContract

// behindNote is how late a run must have sent a request to be marked as
// having fallen behind its schedule (as analyze warns).
const behindNote = 100 * time.Millisecond

// Archived is a run read from its folder: what history needs of it, and
// its run.json.
type Archived struct {
	Run
	Info archive.RunInfo
	// Starved and Behind say the machine was loaded beyond its cores, and
	// the run fell behind its schedule (see Flagged).
	Starved, Behind bool
}

// Flagged reports whether the run's timings carry its machine's trouble:
// a starved machine, or a schedule it could not keep.
func (a *Archived) Flagged() bool { return a.Starved || a.Behind }

// Unread is a path that holds no run history can use, and why.
type Unread struct {
	Path string `json:"path"`
	Why  string `json:"error"`
}

// ReadOptions configure ReadArchive.
type ReadOptions struct {
	// Fleet judges a fleet's run as fleet does and returns its verdict
	// (nil: a fleet run has no verdict in the history).
	Fleet func(in *decode.Input, info archive.RunInfo) string
}

// ReadArchive reads the runs of paths: each a run folder (it holds
// run.json or results.bin) or a folder of run folders (results/). Runs
// are returned in the order found; a path or run folder that cannot be
// read is listed in unread with why, never left out silently.
func ReadArchive(paths []string, o ReadOptions) (runs []Archived, unread []Unread) {
	for _, dir := range runFolders(paths, &unread) {
		a, err := readRun(dir, o)
		if err != nil {
			unread = append(unread, Unread{Path: dir, Why: err.Error()})
			continue
		}
		runs = append(runs, *a)
	}
	return runs, unread
}

// isRun reports whether dir is a run folder.
func isRun(dir string) bool {
	for _, f := range []string{archive.RunFile, archive.ResultsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// runFolders expands paths into run folders, in order, each once.
func runFolders(paths []string, unread *[]Unread) []string {
	var out []string
	add := func(d string) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, p := range paths {
		p = filepath.Clean(p)
		if filepath.Base(p) == archive.RunFile || filepath.Base(p) == archive.ResultsFile {
			p = filepath.Dir(p)
		}
		if isRun(p) {
			add(p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			*unread = append(*unread, Unread{Path: p, Why: err.Error()})
			continue
		}
		n := 0
		for _, e := range entries {
			if d := filepath.Join(p, e.Name()); e.IsDir() && isRun(d) {
				add(d)
				n++
			}
		}
		if n == 0 {
			*unread = append(*unread, Unread{Path: p, Why: "no run folder in it (one holds run.json and results.bin)"})
		}
	}
	return out
}

// readRun reads one run folder.
func readRun(dir string, o ReadOptions) (*Archived, error) {
	info, err := archive.ReadRunInfo(dir)
	switch {
	case err != nil:
		return nil, err
	case info == nil:
		return nil, errors.New("no run.json: when, what and against which target the run was is unknown")
	case info.InProgress:
		return nil, errors.New("the run did not finish (killed?): its run.json was written when it started")
	}
	a := &Archived{Info: *info, Starved: info.Machine.Starved(), Behind: info.BehindMS >= clock.WholeMs(behindNote)}
	a.Run = Run{ID: dir, Kind: cmp.Or(info.Command, "attack"), Target: info.Target, Contract: archive.ContractName(info.Contract), Label: info.Label, Start: info.Start, Notes: notes(info, a)}
	if info.Embedded {
		a.Target = Embedded
	}
	if a.Kind == "capacity" {
		s, err := capacitySample(dir, info)
		if err != nil {
			return nil, err
		}
		a.Surfaces = []Sample{s}
		if s.Verdict == string(capacity.VerdictClient) {
			a.Notes = append(a.Notes, "the load generator could not keep a step's schedule: the knee is the client's, not the target's")
		}
		return a, nil
	}
	if a.Surfaces, err = samples(dir, info, o); err != nil {
		return nil, err
	}
	return a, nil
}

// notes says what a reader of the run's figures should know.
func notes(info *archive.RunInfo, a *Archived) []string {
	var out []string
	if m := info.Machine; a.Starved {
		out = append(out, fmt.Sprintf("machine starved: load %s on %d cores", loads(m), m.Cores))
	}
	if a.Behind {
		out = append(out, fmt.Sprintf("fell behind its schedule by %v", info.BehindMS.Duration().Round(time.Millisecond)))
	}
	if info.Interrupted {
		out = append(out, "interrupted")
	}
	if info.Aborted != "" {
		out = append(out, "aborted: "+info.Aborted)
	}
	return out
}

// loads is the 1-minute load averages at the start and end of a run.
func loads(m *archive.MachineInfo) string {
	var ls []string
	for _, l := range [][]float64{m.LoadStart, m.LoadEnd} {
		if len(l) > 0 {
			ls = append(ls, fmt.Sprintf("%.1f", l[0]))
		}
	}
	return strings.Join(ls, "→")
}

// samples analyzes a run of verify, attack or fleet as analyze does, and
// returns its figures per surface.
func samples(dir string, info *archive.RunInfo, o ReadOptions) ([]Sample, error) {
	in := decode.NewInput()
	if st, err := os.Stat(filepath.Join(dir, archive.ResultsFile)); err != nil || st.Size() > 0 {
		if in, err = analyze.Read([]string{dir}); err != nil {
			return nil, err
		}
	}
	limits := map[string]int{method.REST: method.RESTLimit, method.MCP: method.MCPLimit}
	if p := info.Policy; p.Limit > 0 && (p.Surface == method.REST || p.Surface == method.MCP) {
		limits[p.Surface] = p.Limit
	}
	cfg, _ := analyze.ConfigFor(&in.Meta, analyze.Overrides{Limits: limits, Path: dir})
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		return nil, err
	}
	sum := analyze.Summarize(in, rep)
	var out []Sample
	for i, sv := range rep.Verdict.Surfaces {
		d, ss := rep.Surfaces[i], sum.Surfaces[i]
		if d.Requests == 0 {
			continue
		}
		s := Sample{Surface: sv.Surface, Values: map[Figure]float64{ErrorRate: float64(d.Faults) / float64(d.Requests)}}
		if d.Latency != nil && d.Latency.Count > 0 {
			s.Values[P50], s.Values[P95], s.Values[P99] = float64(ss.P50MS), float64(ss.P95MS), float64(ss.P99MS)
		}
		switch info.Command {
		case "verify":
			s.Verdict, s.Model = sv.Verdict, sv.Model
		case "attack", "":
			s.Model = sv.Model // an attack has no verdict of its own
		}
		if sv.ObservedLimit != nil && info.Fleet == nil {
			s.Values[ObservedLimit] = float64(*sv.ObservedLimit)
		}
		if info.Fleet != nil && o.Fleet != nil && sv.Surface == info.Fleet.Surface {
			s.Verdict = o.Fleet(in, *info)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("no request to either surface")
	}
	return out, nil
}

// capacitySample reads a capacity run's verdict and knee from the result
// its search recorded in run.json's capacity section, through archive,
// which owns run.json (package capacity/runner writes it). Of a search
// sharded over machines, every shard's folder holds the merged result:
// shard 0's is the search's, and the others are refused with why, so that
// one search makes one point.
func capacitySample(dir string, info *archive.RunInfo) (Sample, error) {
	_, ci, err := archive.ReadCapacity(dir)
	if err != nil {
		return Sample{}, err
	}
	if ci.Shard != "" {
		if sh, err := archive.ParseShard(ci.Shard); err == nil && sh.I > 0 {
			return Sample{}, fmt.Errorf("shard %s of a sharded capacity search: its result is the search's, read from shard 0's folder", ci.Shard)
		}
	}
	r := ci.Result
	if r == nil {
		return Sample{}, errors.New("the capacity search recorded no result")
	}
	// A search of a contract's route is that route's series.
	surface := cmp.Or(ci.Surface, info.Policy.Surface, method.REST)
	if info.Contract != nil && info.Contract.Route != "" {
		surface = info.Contract.Route
	}
	s := Sample{Surface: surface, Verdict: string(r.Verdict), Objective: r.Objective(),
		Values: map[Figure]float64{}, Bounds: map[Figure]Bounds{}}
	if finite(r.KneeRPS) {
		s.Values[Knee] = *r.KneeRPS
		b := Bounds{}
		if finite(r.KneeLowRPS) {
			b.Low = r.KneeLowRPS
		}
		if finite(r.KneeHighRPS) {
			b.High = r.KneeHighRPS
		}
		s.Bounds[Knee] = b
	}
	return s, nil
}

// finite reports whether v is a number.
func finite(v *float64) bool { return v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) }
