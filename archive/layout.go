package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/internal/safefile"
)

// A run folder, results/<UTC time>-<name>/, holds:
const (
	// ResultsFile is every result of the run, as a stream of Vegeta gob
	// results in the order they came back: `vegeta report` reads it.
	ResultsFile = "results.bin"
	// RunFile is what the run was: RunInfo as JSON.
	RunFile = "run.json"
)

// RunSchema is the schema of run.json this package writes.
const RunSchema = 1

// RunInfo is the content of run.json.
type RunInfo struct {
	Schema      int          `json:"schema"`
	Command     string       `json:"command"`
	Profile     string       `json:"profile"`
	ProfilePath string       `json:"profile_path,omitempty"`
	Policy      PolicyInfo   `json:"policy"`
	Target      string       `json:"target"`
	Embedded    bool         `json:"embedded_target"`
	WindowMS    clock.Millis `json:"window_ms"`
	Sources     []string     `json:"sources"`
	// SourcePool is the pool the sources were taken from, its items as
	// given (canonical: 2001:db8:2::/112, 198.18.0.10-198.18.0.250), when
	// one was: Sources lists every address of it the run used.
	SourcePool  string              `json:"source_pool,omitempty"`
	Streams     []StreamInfo        `json:"streams"`
	Headers     map[string][]string `json:"headers,omitempty"`
	Version     string              `json:"version"`
	Host        string              `json:"host"`
	Start       time.Time           `json:"start"`
	End         time.Time           `json:"end"`
	Seed        uint64              `json:"seed"`
	Results     int                 `json:"results"`
	Interrupted bool                `json:"interrupted,omitempty"`
	// BehindMS is the latest an open-model request went out after its
	// planned time, and LateRequests how many went out more than 10 ms
	// late, when any did (a stream held at --max-workers, or a machine too
	// slow for the plan): the target then saw a gentler load than planned.
	BehindMS     clock.Millis `json:"behind_ms,omitempty"`
	LateRequests int          `json:"late_requests,omitempty"`
	// Shard is "i/n" when the run was shard i of an attack split over n
	// machines; StartAt is the instant the shards agreed to start at.
	Shard   string     `json:"shard,omitempty"`
	StartAt *time.Time `json:"start_at,omitempty"`
	// Aborted says why the attack stopped early on its own (a failing target).
	Aborted string `json:"aborted,omitempty"`
	// ClockStepMS is how far the wall clock jumped during the run (wall
	// elapsed minus monotonic elapsed), when it did: the archived timestamps
	// are wall-clock, so spans across the step are off by that much.
	ClockStepMS clock.Millis `json:"clock_step_ms,omitempty"`
	// MCPRevision is the MCP protocol revision the run spoke.
	MCPRevision string `json:"mcp_revision,omitempty"`
	// MCP is how that revision was settled (runs that sent MCP requests).
	MCP *MCPInfo `json:"mcp,omitempty"`
	// InProgress is set while the run is going: a run.json that still
	// says so belongs to a run that was killed before it ended.
	InProgress bool `json:"in_progress,omitempty"`
	// SentBefore, when set, is when an earlier run in the same folder
	// last sent to this target from one of this run's addresses, less
	// than a window before this run began (it started anyway, --no-wait):
	// those addresses' budgets may not have been whole.
	SentBefore *time.Time `json:"sent_before,omitempty"`
	// FollowUps say what a run added after its plan and why, a line each
	// (verify's follow-up probes).
	FollowUps []string   `json:"follow_ups,omitempty"`
	Note      string     `json:"note,omitempty"`
	Fleet     *FleetInfo `json:"fleet,omitempty"`
	// Label is the release or build under test (--label), which history
	// sets runs apart by.
	Label string `json:"label,omitempty"`
	// Machine is what the run ran on, so that runs of a series from other
	// hosts, or from a starved one, can be told apart.
	Machine *MachineInfo `json:"machine,omitempty"`
	// Contract is the limits contract the run was made against when it
	// was not the documented API's (absent: the built-in contract).
	Contract *ContractInfo `json:"contract,omitempty"`
	// Capacity is a capacity run's search: its configuration, the
	// schedule of every step and the result, a CapacityInfo as package
	// capacity/runner writes it (ReadCapacity reads it; absent for other
	// runs).
	Capacity json.RawMessage `json:"capacity,omitempty"`
	// Dir is the run folder it was read from (not written).
	Dir string `json:"-"`
}

// ProgramOutcome is how one client program of a fleet --client-cmd run
// ended.
type ProgramOutcome struct {
	Client int `json:"client"`
	// ExitCode is the program's exit status (-1: killed, or not started).
	ExitCode int  `json:"exit_code"`
	TimedOut bool `json:"timed_out,omitempty"`
	// Error says why it could not be started or waited for.
	Error string `json:"error,omitempty"`
}

// BarrierInfo is how the barrier of a fleet --client-cmd run went: how
// many clients' first requests arrived, how long it held them from the
// first arrival, and whether it opened on its timeout.
type BarrierInfo struct {
	Arrived  int          `json:"arrived"`
	WaitedMS clock.Millis `json:"waited_ms"`
	TimedOut bool         `json:"timed_out,omitempty"`
}

// FleetInfo records what a fleet run asked of its clients.
type FleetInfo struct {
	Surface    string       `json:"surface"`
	Source     string       `json:"source"`
	Clients    int          `json:"clients"`
	Requests   int          `json:"requests"`
	Strategy   string       `json:"strategy"`
	BaseMS     clock.Millis `json:"base_ms"`
	CapMS      clock.Millis `json:"cap_ms"`
	Attempts   int          `json:"attempts"`
	SlowDownMS clock.Millis `json:"slowdown_ms"`
	EpsilonMS  clock.Millis `json:"epsilon_ms"`
	Rows       int          `json:"rows"`
	// Of a fleet of client programs (fleet --client-cmd): the command,
	// the barrier, the longest the target stalled while they ran, and how
	// each ended.
	Command  string           `json:"command,omitempty"`
	Barrier  *BarrierInfo     `json:"barrier,omitempty"`
	StallMS  clock.Millis     `json:"stall_ms,omitempty"`
	Programs []ProgramOutcome `json:"programs,omitempty"`
}

// MCPInfo records how a run settled the MCP revision it spoke: what
// --mcp-revision asked for, the address negotiation went out from, and
// the handshakes it took.
type MCPInfo struct {
	// Requested is what --mcp-revision asked for: auto or a revision.
	Requested string `json:"requested"`
	// From is the source address negotiation went out from ("": the
	// system's choice): the contract probes' address, never the limit
	// address.
	From string `json:"from"`
	// Supported lists the revisions the server named, when it named them.
	Supported []string `json:"supported,omitempty"`
	// Server names the server (name/version), when it said.
	Server string `json:"server,omitempty"`
	// Session says the server assigned an Mcp-Session-Id.
	Session bool `json:"session,omitempty"`
	// Handshakes counts the handshakes made (server/discover, or
	// initialize and notifications/initialized): one before the run, and
	// one more for every source address the target bound sessions to
	// (BoundSources) and every session it ended during the run.
	Handshakes int `json:"handshakes"`
	// Requests counts the HTTP requests every handshake sent together.
	Requests int `json:"requests"`
	// BoundSources are the source addresses that needed a session of
	// their own: the target answered 404 to the shared one from them.
	BoundSources []string `json:"bound_sources,omitempty"`
	// Error is why negotiation failed, when it did: the run then spoke
	// MCPRevision without a session.
	Error string `json:"error,omitempty"`
}

// PolicyInfo records the policy a run expected.
type PolicyInfo struct {
	Surface  string       `json:"surface"`
	Limit    int          `json:"limit,omitempty"`
	WindowMS clock.Millis `json:"window_ms"`
}

// StreamInfo records one stream of a run.
type StreamInfo struct {
	Name    string       `json:"name"`
	Surface string       `json:"surface"`
	Sources []string     `json:"sources"`
	Pacer   string       `json:"pacer"`
	Planned uint64       `json:"planned"`
	StartMS clock.Millis `json:"start_ms"`
	// As is the contract identity the stream sent as (its name: the
	// credentials it sent are never recorded), "" for none.
	As string `json:"as,omitempty"`
}

// maxRunFile bounds how much of a run.json is read: a real one is a few
// kilobytes, and a link to /dev/zero must not fill the memory.
const maxRunFile = 1 << 20

// maxWindow bounds the window a run.json may record: a day.
const maxWindow = 24 * time.Hour

// ReadRunInfo reads dir's run.json: nil and no error when there is none
// (a run killed before it ended, or a folder of copied results). A
// run.json that is not JSON, is larger than a run.json can be, or records
// a window that is not a positive duration of at most a day is an error
// that names it.
func ReadRunInfo(dir string) (*RunInfo, error) {
	path := filepath.Join(dir, RunFile)
	b, err := safefile.Read(path, maxRunFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	run := &RunInfo{Dir: dir}
	if err := json.Unmarshal(b, run); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Whole milliseconds, as run.json has always written them; a window
	// under 1 ms is none.
	if w := run.WindowMS; w != 0 && (w < 1 || w > clock.WholeMs(maxWindow)) {
		return nil, fmt.Errorf("%s: window_ms %s is not a window (want 1 to %d ms)", path, strconv.FormatFloat(float64(w), 'f', -1, 64), maxWindow.Milliseconds())
	}
	return run, nil
}

// Window returns the window the run recorded (0: none).
func (r *RunInfo) Window() time.Duration { return r.WindowMS.Duration() }
