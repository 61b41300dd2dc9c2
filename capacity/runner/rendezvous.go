package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/internal/safefile"
)

// The lockstep of a sharded search, when [Config] does not say otherwise.
const (
	// DefaultGap is the pause between the latest shard's finish of a
	// segment and the start of the next: time for every shard to see the
	// last report, judge the step and set up its attackers.
	DefaultGap = 250 * time.Millisecond
	// DefaultSlack is how long past a segment's scheduled end and the
	// request timeout a shard waits for the others' reports.
	DefaultSlack = 5 * time.Second
	// pollEvery is how often a waiting shard looks for the others' reports.
	pollEvery = 50 * time.Millisecond
	// maxReport bounds a report read back: three durations a request.
	maxReport = 1 << 30
)

// report is what a shard of a search writes to the rendezvous after each
// segment: which segment it ran, when it finished, and its judged samples,
// or why it stopped.
type report struct {
	// Shard is the shard that wrote it, "i/N".
	Shard string `json:"shard"`
	// StartAt is the search's agreed start: a report of another search
	// (an earlier run in the same folder) has another.
	StartAt time.Time `json:"start_at"`
	// Segment counts the segments from 0; Step, Stream, RateRPS and
	// Continue say what the segment was, the same in every shard.
	Segment  int     `json:"segment"`
	Step     int     `json:"step"`
	Stream   string  `json:"stream"`
	RateRPS  float64 `json:"rate_rps"`
	Continue bool    `json:"continue,omitempty"`
	// Finished is when the shard's last answer of the segment came in.
	Finished time.Time `json:"finished"`
	// Stats are the shard's judged samples of the segment.
	Stats *capacity.Stats `json:"stats,omitempty"`
	// Error, when set, says why the shard stopped instead.
	Error string `json:"error,omitempty"`
}

// shardError ends a sharded search when another shard did not report a
// segment in time, stopped, or runs another search.
type shardError struct {
	// Shard is the shard at fault.
	Shard attack.Shard
	// Step and Stream name the step and the segment it did not report.
	Step   int
	Stream string
	// Problem says what went wrong, in words for a person.
	Problem string
}

// Error names the shard, the step and the problem.
func (e *shardError) Error() string {
	return fmt.Sprintf("shard %v, step %d (segment %s): %s", e.Shard, e.Step, e.Stream, e.Problem)
}

// rendezvous is the folder the shards of a search share (a volume every
// machine mounts): after every segment each shard writes its report
// there, to <folder>/segment-NNNN/shard-i.json, and waits for the
// others'. It is not safe for concurrent use.
type rendezvous struct {
	dir     string
	shard   attack.Shard
	startAt time.Time
	now     func() time.Time // the clock; nil: time.Now
	poll    time.Duration    // how often to look; 0: pollEvery
}

// path is where shard i reports segment seq.
func (rv *rendezvous) path(seq, i int) string {
	return filepath.Join(rv.dir, fmt.Sprintf("segment-%04d", seq), fmt.Sprintf("shard-%d.json", i))
}

// write puts this shard's report in place atomically: written to a
// temporary file beside it, then renamed, so that no shard ever reads
// half of one.
func (rv *rendezvous) write(r report) error {
	r.Shard, r.StartAt = rv.shard.String(), rv.startAt.UTC()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p := rv.path(r.Segment, rv.shard.I)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".shard-*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("rendezvous: %w", err)
	}
	return nil
}

// wait waits until every shard reported segment own.Segment, until
// deadline or until ctx ends, and returns the reports in shard order. A
// report of another search (another agreed start) is not yet there; one
// that stopped, or ran another segment, is a *shardError, and so is a
// shard still missing at the deadline.
func (rv *rendezvous) wait(ctx context.Context, own report, deadline time.Time) ([]report, error) {
	now, poll := rv.now, rv.poll
	if now == nil {
		now = time.Now
	}
	if poll == 0 {
		poll = pollEvery
	}
	got := make([]report, rv.shard.N)
	have := make([]bool, rv.shard.N)
	for left := rv.shard.N; ; {
		for i := range got {
			if have[i] {
				continue
			}
			r, ok, err := rv.read(own, i)
			if err != nil {
				return nil, err
			}
			if ok {
				got[i], have[i], left = r, true, left-1
			}
		}
		if left == 0 {
			return got, nil
		}
		if !now().Before(deadline) {
			for i := range have {
				if !have[i] {
					return nil, &shardError{Shard: attack.Shard{I: i, N: rv.shard.N}, Step: own.Step, Stream: own.Stream,
						Problem: fmt.Sprintf("no report in %s by %s: is it running, and does it share this rendezvous folder?",
							rv.dir, deadline.UTC().Format("15:04:05.000Z"))}
				}
			}
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// read reads shard i's report of own's segment, and reports whether it
// is there and of this search.
func (rv *rendezvous) read(own report, i int) (report, bool, error) {
	p := rv.path(own.Segment, i)
	b, err := safefile.Read(p, maxReport)
	if errors.Is(err, fs.ErrNotExist) {
		return report{}, false, nil
	}
	fault := func(format string, args ...any) (report, bool, error) {
		return report{}, false, &shardError{Shard: attack.Shard{I: i, N: rv.shard.N}, Step: own.Step, Stream: own.Stream, Problem: fmt.Sprintf(format, args...)}
	}
	if err != nil {
		return fault("its report: %v", err)
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fault("its report %s: %v", p, err)
	}
	switch {
	case !r.StartAt.Equal(rv.startAt) || r.Shard != (attack.Shard{I: i, N: rv.shard.N}).String():
		return report{}, false, nil // an earlier search's, to be replaced
	case r.Error != "":
		return fault("stopped: %s", r.Error)
	case r.Step != own.Step || r.RateRPS != own.RateRPS || r.Continue != own.Continue || r.Stream != own.Stream:
		return fault("it ran step %d at %g/s (segment %s), this shard step %d at %g/s: the shards run other searches (give every shard the same flags)",
			r.Step, r.RateRPS, r.Stream, own.Step, own.RateRPS)
	case r.Stats == nil:
		return fault("its report %s holds no samples", p)
	}
	return r, true, nil
}

// merge is the step's samples over every shard, merged in shard order,
// and when the next segment starts: the latest finish plus gap.
func merge(reports []report, gap time.Duration) (*capacity.Stats, time.Time) {
	st := capacity.NewStats()
	var last time.Time
	for _, r := range reports {
		st.Merge(r.Stats)
		if r.Finished.After(last) {
			last = r.Finished
		}
	}
	return st, last.Add(gap)
}
