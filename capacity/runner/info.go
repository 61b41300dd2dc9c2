package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// infoOf is the configuration part of cfg's capacity section.
func infoOf(cfg Config) archive.CapacityInfo {
	o := cfg.Search
	return archive.CapacityInfo{Surface: cfg.Surface, ThroughLimit: o.ThroughLimit, SLO: o.Objective.SLO.String(), ErrorBudget: o.Objective.ErrorBudget,
		Confidence: o.Confidence, StartRPS: o.StartRate, MaxRPS: o.MaxRate, Factor: o.Factor, Precision: o.Precision,
		StepMS: clock.Ms(o.Step), WarmupMS: clock.Ms(o.Warmup), MaxStepMS: clock.Ms(o.MaxStep), MaxSteps: o.MaxSteps,
		MinAchieved: o.MinAchieved, MaxLatenessMS: clock.Ms(o.MaxLateness), Limit: o.Limit, WindowMS: clock.WholeMs(o.Window),
		Share: o.Share, Sources: o.Sources, Seed: o.Seed, Resamples: o.Resamples}
}

// optionsOf are the search options i records.
func optionsOf(i *archive.CapacityInfo) (capacity.Options, error) {
	slo, err := capacity.ParseSLO(i.SLO)
	if err != nil {
		return capacity.Options{}, fmt.Errorf("run.json's capacity section: %w", err)
	}
	shard, err := i.ShardOf()
	if err != nil {
		return capacity.Options{}, err
	}
	return capacity.Options{Shards: shard.N, Objective: capacity.Objective{SLO: slo, ErrorBudget: i.ErrorBudget}, Confidence: i.Confidence,
		StartRate: i.StartRPS, MaxRate: i.MaxRPS, Factor: i.Factor, Precision: i.Precision, Step: i.StepMS.Duration(),
		Warmup: i.WarmupMS.Duration(), MaxStep: i.MaxStepMS.Duration(), MaxSteps: i.MaxSteps, MinAchieved: i.MinAchieved,
		MaxLateness: i.MaxLatenessMS.Duration(), Limit: i.Limit, Window: i.WindowMS.Duration(), Share: i.Share, ThroughLimit: i.ThroughLimit, Sources: i.Sources,
		Seed: i.Seed, Resamples: i.Resamples}, nil
}

// Replay judges a capacity run again from its folder alone: the schedule
// in run.json and every result in results.bin (each request's intended
// send time recomputed from its step's schedule and its sequence number)
// drive a new search through the same steps. A sharded search is judged
// again from the folders of all its shards, in any order: every segment's
// samples merged over the shards, as the shards merged them. It returns
// the recorded section (shard 0's) and the result, which is the recorded
// one when nothing in the folders changed.
func Replay(dirs ...string) (*archive.CapacityInfo, capacity.Result, error) {
	infos, stats, err := readShards(dirs)
	if err != nil {
		return nil, capacity.Result{}, err
	}
	ci := infos[0]
	o, err := optionsOf(ci)
	if err != nil {
		return ci, capacity.Result{}, err
	}
	s, err := capacity.NewSearch(o)
	if err != nil {
		return ci, capacity.Result{}, err
	}
	var st *capacity.Stats
	for i := range ci.Segments {
		if unjudged(infos, i) {
			break
		}
		g := &ci.Segments[i]
		step, ok := s.Next()
		if !ok || step.Index != g.Step || step.Rate != g.RateRPS || step.Continue != g.Continue {
			return ci, capacity.Result{}, fmt.Errorf("segment %s: the search would have run another step (%+v): the archive does not replay", g.Stream, step)
		}
		if !g.Continue {
			st = capacity.NewStats()
		}
		for k := range stats {
			st.Merge(stats[k][i])
		}
		if _, err := s.Record(st); err != nil {
			return ci, capacity.Result{}, err
		}
	}
	return ci, s.Result(), nil
}

// unjudged reports whether segment i is missing from, or was not judged
// in, any shard's folder.
func unjudged(infos []*archive.CapacityInfo, i int) bool {
	for _, ci := range infos {
		if i >= len(ci.Segments) || ci.Segments[i].Unjudged {
			return true
		}
	}
	return false
}

// readShards reads the capacity section and the samples of every segment
// of each folder, in shard order, and refuses folders that are not the
// shards of one search, each once.
func readShards(dirs []string) ([]*archive.CapacityInfo, [][]*capacity.Stats, error) {
	if len(dirs) == 0 {
		return nil, nil, errors.New("no capacity run folder to judge")
	}
	infos := make([]*archive.CapacityInfo, len(dirs))
	stats := make([][]*capacity.Stats, len(dirs))
	for _, dir := range dirs {
		_, ci, err := archive.ReadCapacity(dir)
		if err != nil {
			return nil, nil, err
		}
		shard, err := ci.ShardOf()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", dir, err)
		}
		switch {
		case shard.N != len(dirs):
			return nil, nil, fmt.Errorf("%s is shard %v of a search sharded %d ways: judge the run folders of all %d shards together, and nothing else", dir, shard, shard.N, shard.N)
		case infos[shard.I] != nil:
			return nil, nil, fmt.Errorf("%s: shard %v given twice", dir, shard)
		}
		st, err := readStats(filepath.Join(dir, archive.ResultsFile), ci)
		if err != nil {
			return nil, nil, err
		}
		infos[shard.I], stats[shard.I] = ci, st
	}
	for _, ci := range infos[1:] {
		for i := range min(len(ci.Segments), len(infos[0].Segments)) {
			a, b := &infos[0].Segments[i], &ci.Segments[i]
			if a.Step != b.Step || a.RateRPS != b.RateRPS || a.Continue != b.Continue || !a.Start.Equal(b.Start) {
				return nil, nil, fmt.Errorf("segment %d: shard %s ran %s at %g/s from %v, shard 0 %s at %g/s from %v: not the shards of one search",
					i, ci.Shard, b.Stream, b.RateRPS, b.Start, a.Stream, a.RateRPS, a.Start)
			}
		}
	}
	return infos, stats, nil
}

// readStats streams results.bin into one Stats per segment, each result
// under the segment and source its label names: read from a file, a
// result's labels are the string in its Attack, read by the one parser of
// labels (archive.ParseLabel).
func readStats(path string, ci *archive.CapacityInfo) ([]*capacity.Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bySeg := map[string]int{}
	srcIdx := make([]map[string]int, len(ci.Segments))
	stats := make([]*capacity.Stats, len(ci.Segments))
	for i, g := range ci.Segments {
		bySeg[g.Stream] = i
		srcIdx[i] = sourceIndex(&g)
		stats[i] = capacity.NewStats()
		stats[i].HostWaits(g.HostWaits)
	}
	dec := vegeta.NewDecoder(bufio.NewReaderSize(f, 1<<16))
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err == io.EOF {
			return stats, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		l := archive.ParseLabel(r.Attack, r.URL)
		i, ok := bySeg[l.Stream]
		if !ok {
			continue
		}
		j, ok := srcIdx[i][l.Source]
		if !ok {
			continue
		}
		if smp, judged := sampleOf(&ci.Segments[i], j, &r, ci.ThroughLimit); judged {
			stats[i].Add(smp)
		}
	}
}

// sourceIndex maps each source a result of segment g is labelled with
// (archive.DefaultSource for the system's choice) to its index in
// g.Sources.
func sourceIndex(g *archive.CapacitySegment) map[string]int {
	idx := make(map[string]int, len(g.Sources))
	for j, src := range g.Sources {
		if src == "" {
			src = archive.DefaultSource
		}
		idx[src] = j
	}
	return idx
}
