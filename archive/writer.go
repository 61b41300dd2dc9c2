package archive

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/connectbyjbrh/ratecheck/redact"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Writer writes one run folder: results.bin, a stream of Vegeta gob
// results that `vegeta report` reads, and run.json, what the run was.
// Results are flushed as they come, so an interrupted run keeps every
// result received. A Writer is not safe for concurrent use.
type Writer struct {
	// Dir is the run folder.
	Dir string
	f   *os.File
	bw  *bufio.Writer
	enc vegeta.Encoder
	n   int
}

// Create makes a new run folder root/<UTC time>-<name> (with a numeric
// suffix if that exists) and opens its results file. The name must be
// letters, digits, '.', '_' and '-' only, not starting with '.', so that
// the folder stays under root.
func Create(root, name string, now time.Time) (*Writer, error) {
	if !safeName(name) {
		return nil, fmt.Errorf("run folder name %q: want letters, digits, '.', '_' or '-', not starting with '.'", name)
	}
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
	return &Writer{Dir: dir, f: f, bw: bw, enc: vegeta.NewEncoder(bw)}, nil
}

// Add appends one result, its credential values redacted first (in r too:
// see redact.Result), so that no credential reaches the run folder.
func (a *Writer) Add(r *vegeta.Result) error {
	redact.Result(r)
	if err := a.enc.Encode(r); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(a.Dir, ResultsFile), diskHint(err))
	}
	a.n++
	return nil
}

// Flush writes buffered results to the file.
func (a *Writer) Flush() error {
	if err := a.bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(a.Dir, ResultsFile), diskHint(err))
	}
	return nil
}

// Len returns the number of results added.
func (a *Writer) Len() int { return a.n }

// Start writes run.json as the run starts, marked in progress, so that a
// run killed before Close (SIGKILL, a crash) is still analyzed with its
// real window.
func (a *Writer) Start(info RunInfo) error {
	info.InProgress = true
	return a.writeInfo(info)
}

// Close flushes and closes the results file and writes run.json.
func (a *Writer) Close(info RunInfo) error {
	ferr := a.Flush()
	if err := a.f.Close(); err != nil && ferr == nil {
		ferr = fmt.Errorf("closing %s: %w", ResultsFile, diskHint(err))
	}
	info.InProgress = false
	return errors.Join(ferr, a.writeInfo(info))
}

// writeInfo writes run.json whole or not at all (through a temporary file
// renamed into place).
func (a *Writer) writeInfo(info RunInfo) error {
	info.Schema = RunSchema
	info.Results = a.n
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(a.Dir, RunFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, diskHint(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// safeName reports whether name is a safe file name: letters, digits,
// '.', '_' and '-', at most 128 bytes, not starting with '.'.
func safeName(name string) bool {
	if name == "" || len(name) > 128 || name[0] == '.' {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
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
