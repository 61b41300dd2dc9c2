package attack

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// ResultsFile and RunFile are the names of an archive's files.
const (
	ResultsFile = "results.bin"
	RunFile     = "run.json"
)

// Archive is one run folder under results/: results.bin, a stream of
// Vegeta gob results that `vegeta report` reads, and run.json, what the run
// was. Results are flushed as they come, so an interrupted run keeps every
// result received. An Archive is not safe for concurrent use.
type Archive struct {
	// Dir is the run folder.
	Dir string
	f   *os.File
	bw  *bufio.Writer
	enc vegeta.Encoder
	n   int
}

// RunInfo is the content of run.json.
type RunInfo struct {
	Schema      int                 `json:"schema"`
	Command     string              `json:"command"`
	Profile     string              `json:"profile"`
	ProfilePath string              `json:"profile_path,omitempty"`
	Policy      PolicyInfo          `json:"policy"`
	Target      string              `json:"target"`
	Embedded    bool                `json:"embedded_target"`
	WindowMS    int64               `json:"window_ms"`
	Sources     []string            `json:"sources"`
	Streams     []StreamInfo        `json:"streams"`
	Headers     map[string][]string `json:"headers,omitempty"`
	Version     string              `json:"version"`
	Host        string              `json:"host"`
	Start       time.Time           `json:"start"`
	End         time.Time           `json:"end"`
	Seed        uint64              `json:"seed"`
	Results     int                 `json:"results"`
	Interrupted bool                `json:"interrupted,omitempty"`
	// Shard is "i/n" when the run was shard i of an attack split over n
	// machines; StartAt is the instant the shards agreed to start at.
	Shard   string     `json:"shard,omitempty"`
	StartAt *time.Time `json:"start_at,omitempty"`
	// Aborted says why the attack stopped early on its own (a failing target).
	Aborted string `json:"aborted,omitempty"`
	// ClockStepMS is how far the wall clock jumped during the run (wall
	// elapsed minus monotonic elapsed), when it did: the archived timestamps
	// are wall-clock, so spans across the step are off by that much.
	ClockStepMS int64      `json:"clock_step_ms,omitempty"`
	Note        string     `json:"note,omitempty"`
	Fleet       *FleetInfo `json:"fleet,omitempty"`
}

// FleetInfo records what a fleet run asked of its clients.
type FleetInfo struct {
	Surface    string  `json:"surface"`
	Source     string  `json:"source"`
	Clients    int     `json:"clients"`
	Requests   int     `json:"requests"`
	Strategy   string  `json:"strategy"`
	BaseMS     float64 `json:"base_ms"`
	CapMS      float64 `json:"cap_ms"`
	Attempts   int     `json:"attempts"`
	SlowDownMS float64 `json:"slowdown_ms"`
	EpsilonMS  float64 `json:"epsilon_ms"`
	Rows       int     `json:"rows"`
}

// PolicyInfo records the policy a run expected.
type PolicyInfo struct {
	Surface  string `json:"surface"`
	Limit    int    `json:"limit,omitempty"`
	WindowMS int64  `json:"window_ms"`
}

// StreamInfo records one stream of a run.
type StreamInfo struct {
	Name    string   `json:"name"`
	Surface string   `json:"surface"`
	Sources []string `json:"sources"`
	Pacer   string   `json:"pacer"`
	Planned uint64   `json:"planned"`
	StartMS int64    `json:"start_ms"`
}

// CreateArchive makes a new run folder root/<UTC time>-<name> (with a
// numeric suffix if that exists) and opens its results file.
func CreateArchive(root, name string, now time.Time) (*Archive, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", root, diskHint(err))
	}
	base := filepath.Join(root, now.UTC().Format("20060102T150405Z")+"-"+name)
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i > 100 {
			return nil, fmt.Errorf("creating run folder: %w", diskHint(err))
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
	f, err := os.Create(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", ResultsFile, diskHint(err))
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	return &Archive{Dir: dir, f: f, bw: bw, enc: vegeta.NewEncoder(bw)}, nil
}

// Add appends one result, its credential values redacted first (in r too:
// see RedactResult).
func (a *Archive) Add(r *vegeta.Result) error {
	RedactResult(r)
	if err := a.enc.Encode(r); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(a.Dir, ResultsFile), diskHint(err))
	}
	a.n++
	return nil
}

// Flush writes buffered results to the file.
func (a *Archive) Flush() error {
	if err := a.bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(a.Dir, ResultsFile), diskHint(err))
	}
	return nil
}

// Len returns the number of results added.
func (a *Archive) Len() int { return a.n }

// Close flushes and closes the results file and writes run.json.
func (a *Archive) Close(info RunInfo) error {
	ferr := a.Flush()
	if err := a.f.Close(); err != nil && ferr == nil {
		ferr = fmt.Errorf("closing %s: %w", ResultsFile, diskHint(err))
	}
	info.Schema = 1
	info.Results = a.n
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(a.Dir, RunFile), append(b, '\n'), 0o644); err != nil {
		return errors.Join(ferr, fmt.Errorf("writing %s: %w", RunFile, diskHint(err)))
	}
	return ferr
}

// diskHint says plainly when the disk is full.
func diskHint(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("the disk is full: %w", err)
	}
	return err
}

// ClockStep returns how far the wall clock stepped while wall time elapsed
// wall and the monotonic clock mono, and whether that is a step rather than
// drift (more than 100 ms plus 1 % of the run).
func ClockStep(wall, mono time.Duration) (time.Duration, bool) {
	step := wall - mono
	return step, step.Abs() > 100*time.Millisecond+mono/100
}
