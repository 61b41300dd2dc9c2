package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// Programs is a fleet of the user's own client programs (fleet
// --client-cmd): N copies of Command, started at once, each told in its
// environment where to send and how many logical requests to make. The
// server side (a harness in front of the reference target, which the
// caller starts as the engine's embedded target) records every request it
// receives, and hands each to Results as a Vegeta result; the programs'
// own account of themselves is never read. It is a Job of the Engine.
type Programs struct {
	// Command is run by sh -c, with RATECHECK_BASE_URL (the target's URL
	// with /c/<client>), RATECHECK_CLIENT, RATECHECK_SURFACE and
	// RATECHECK_REQUESTS in its environment.
	Command string
	// Clients is how many copies run; Surface is rest or mcp; Requests
	// the logical requests each is asked to make.
	Clients  int
	Surface  string
	Requests int
	// Timeout bounds each program (then its process group is killed, and
	// reported).
	Timeout time.Duration
	// Planned is how long the run is expected to take, for the progress
	// line.
	Planned time.Duration
	// Results delivers what the server recorded; it is closed by the
	// caller once the harness has stopped recording.
	Results <-chan archive.Result
	// Fleet describes the run for run.json.
	Fleet archive.FleetInfo
	// Window is the target's window, for run.json.
	Window time.Duration

	// OnFinish, when set, adds what the caller knows at the end of the run
	// to run.json (the barrier, the target's stalls).
	OnFinish func(*archive.RunInfo)

	dir     string
	mu      sync.Mutex
	outcome []archive.ProgramOutcome
}

// Prepare implements [attack.Preparer]: the programs'
// stdout and stderr go to the run folder, clients/<n>.out and .err.
func (p *Programs) Prepare(dir string) error {
	p.dir = filepath.Join(dir, "clients")
	return os.MkdirAll(p.dir, 0o755)
}

// Duration implements Job.
func (p *Programs) Duration() time.Duration { return p.Planned }

// Info implements Job.
func (p *Programs) Info() archive.RunInfo {
	f := p.Fleet
	return archive.RunInfo{Profile: "fleet", WindowMS: clock.WholeMs(p.Window), Fleet: &f,
		Policy: archive.PolicyInfo{Surface: p.Surface, WindowMS: clock.WholeMs(p.Window)}}
}

// Outcomes returns how each program ended, by client number.
func (p *Programs) Outcomes() []archive.ProgramOutcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]archive.ProgramOutcome(nil), p.outcome...)
}

// Finish implements [attack.Finisher]: run.json records how
// each program ended, and what OnFinish adds.
func (p *Programs) Finish(info *archive.RunInfo) {
	if info.Fleet == nil {
		info.Fleet = &archive.FleetInfo{}
	}
	info.Fleet.Programs = p.Outcomes()
	if p.OnFinish != nil {
		p.OnFinish(info)
	}
}

// Run implements Job: it starts every program at once, at a lower
// priority than the target's (fifty interpreters at normal priority
// starve an in-process target), hands every result the server records to
// sink, and returns once every program has ended (or was killed at its
// timeout, or ctx ended) and the results are drained.
func (p *Programs) Run(ctx context.Context, target string, sink func(archive.Result) error) error {
	if p.dir == "" {
		return errors.New("programs: no run folder to write their output to (Prepare)")
	}
	nice, _ := exec.LookPath("nice")
	done := make(chan struct{})
	var wg sync.WaitGroup
	p.outcome = make([]archive.ProgramOutcome, p.Clients)
	for i := range p.Clients {
		client := i + 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := p.runOne(ctx, nice, target, client)
			p.mu.Lock()
			p.outcome[client-1] = o
			p.mu.Unlock()
		}()
	}
	go func() { wg.Wait(); close(done) }()
	var sinkErr error
	for {
		select {
		case r, ok := <-p.Results:
			if !ok {
				<-done
				return sinkErr
			}
			if sinkErr == nil {
				sinkErr = sink(r)
			}
		case <-done:
			// Every program ended: take what the server still records of
			// their last requests (it records once an answer is written,
			// which a program may see before), until it is quiet.
			for {
				select {
				case r, ok := <-p.Results:
					if !ok {
						return sinkErr
					}
					if sinkErr == nil {
						sinkErr = sink(r)
					}
				case <-time.After(200 * time.Millisecond):
					return sinkErr
				}
			}
		}
	}
}

// ScriptedFault implements [attack.FaultScripter]: the harness scripts a
// 503 or a reset as the first answer of some logical requests (see
// refserver.Clients), and tags them with that answer (label
// answer=fault).
func (p *Programs) ScriptedFault(r archive.Result) bool {
	return r.Labels.Fleet != nil && r.Labels.Fleet.Answer == scriptedFault
}

// scriptedFault is the answer (archive.FleetTag.Answer) of a result the
// harness scripted as a fault.
const scriptedFault = "fault"

// runOne runs client program n to its end or its timeout.
func (p *Programs) runOne(ctx context.Context, nice, target string, n int) archive.ProgramOutcome {
	o := archive.ProgramOutcome{Client: n, ExitCode: -1}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	args := []string{"sh", "-c", p.Command}
	if nice != "" {
		args = append([]string{nice, "-n", "10"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(),
		"RATECHECK_BASE_URL="+target+"/c/"+strconv.Itoa(n),
		"RATECHECK_CLIENT="+strconv.Itoa(n),
		"RATECHECK_SURFACE="+p.Surface,
		"RATECHECK_REQUESTS="+strconv.Itoa(p.Requests))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so that a timeout kills its children too
	stdout, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%d.out", n)))
	if err != nil {
		o.Error = err.Error()
		return o
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%d.err", n)))
	if err != nil {
		o.Error = err.Error()
		return o
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		o.Error = err.Error()
		return o
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-waited
		o.TimedOut = ctx.Err() == context.DeadlineExceeded
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		o.ExitCode = 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		o.ExitCode = exit.ExitCode()
	default:
		o.Error = err.Error()
	}
	return o
}

// Descriptors estimates the file descriptors a fleet of client programs
// holds open in this process at once: per program its output files, its
// process handle and the connection it makes to the target, which is
// always embedded here (the harness records what it receives), and a
// margin.
func (p *Programs) Descriptors(bool) int { return 4*p.Clients + attack.DescriptorMargin }
