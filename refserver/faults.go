package refserver

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults describes transport faults and latency the reference target injects
// so that retrying clients can be exercised. The zero value injects nothing.
type Faults struct {
	// ServerError is the probability of answering 503 instead of handling the request.
	ServerError float64
	// Reset is the probability of resetting the connection without an answer.
	Reset float64
	// DelayMin and DelayMax bound a uniform delay added before every answer.
	DelayMin, DelayMax time.Duration
	// FreezeFor and FreezeEvery freeze the target for FreezeFor at the end
	// of every FreezeEvery since it started (a pause of the whole process,
	// as a stop-the-world collection or a stalled host makes it): a request
	// that arrives during a freeze is held until it ends.
	FreezeFor, FreezeEvery time.Duration
}

// String returns the spec that ParseFaults reads back into f.
func (f Faults) String() string {
	var parts []string
	if f.ServerError > 0 {
		parts = append(parts, "5xx="+strconv.FormatFloat(f.ServerError, 'g', -1, 64))
	}
	if f.Reset > 0 {
		parts = append(parts, "reset="+strconv.FormatFloat(f.Reset, 'g', -1, 64))
	}
	if f.DelayMax > 0 {
		parts = append(parts, "delay="+f.DelayMin.String()+"-"+f.DelayMax.String())
	}
	if f.FreezeEvery > 0 {
		parts = append(parts, "freeze="+f.FreezeFor.String()+"/"+f.FreezeEvery.String())
	}
	return strings.Join(parts, ",")
}

// ParseFaults reads a spec such as "5xx=0.02,reset=0.01,delay=5ms-40ms".
// Probabilities are in [0, 1] and add up to at most 1; a delay is one
// duration or a range "MIN-MAX"; a freeze is "FOR/EVERY" such as 1s/10s,
// with 0 < FOR < EVERY. The empty spec means no faults.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	if strings.TrimSpace(spec) == "" {
		return f, nil
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || val == "" {
			return Faults{}, fmt.Errorf("fault %q: want KEY=VALUE (keys: 5xx, reset, delay, freeze)", item)
		}
		if seen[key] {
			return Faults{}, fmt.Errorf("fault %q given twice", key)
		}
		seen[key] = true
		switch key {
		case "5xx", "reset":
			p, err := strconv.ParseFloat(val, 64)
			if err != nil || !(p >= 0 && p <= 1) { // NaN too
				return Faults{}, fmt.Errorf("fault %s=%s: want a probability between 0 and 1", key, val)
			}
			if key == "5xx" {
				f.ServerError = p
			} else {
				f.Reset = p
			}
		case "delay":
			lo, hi, isRange := strings.Cut(val, "-")
			if !isRange {
				hi = lo
			}
			dlo, err1 := time.ParseDuration(lo)
			dhi, err2 := time.ParseDuration(hi)
			if err1 != nil || err2 != nil || dlo < 0 || dhi < dlo {
				return Faults{}, fmt.Errorf("fault delay=%s: want a duration or MIN-MAX with 0 <= MIN <= MAX, such as 5ms-40ms", val)
			}
			f.DelayMin, f.DelayMax = dlo, dhi
		case "freeze":
			a, b, _ := strings.Cut(val, "/")
			d, err1 := time.ParseDuration(a)
			every, err2 := time.ParseDuration(b)
			if err1 != nil || err2 != nil || d <= 0 || every <= d {
				return Faults{}, fmt.Errorf("fault freeze=%s: want FOR/EVERY with 0 < FOR < EVERY, such as 1s/10s", val)
			}
			f.FreezeFor, f.FreezeEvery = d, every
		default:
			return Faults{}, fmt.Errorf("fault %q: unknown kind (want 5xx, reset, delay or freeze)", key)
		}
	}
	if f.ServerError+f.Reset > 1 {
		return Faults{}, fmt.Errorf("faults 5xx=%g and reset=%g add up to more than 1", f.ServerError, f.Reset)
	}
	return f, nil
}

// frozen returns how long a request arriving at now (the server's clock)
// is held by a freeze: until the freeze ends, 0 outside one.
func (f Faults) frozen(now time.Duration) time.Duration {
	if f.FreezeEvery <= 0 {
		return 0
	}
	if ph := now % f.FreezeEvery; ph >= f.FreezeEvery-f.FreezeFor {
		return f.FreezeEvery - ph
	}
	return 0
}

// fault is what happens to one request.
type fault int

const (
	faultNone fault = iota
	faultServerError
	faultReset
)

// faultSource draws faults deterministically from a seed. Safe for concurrent use.
type faultSource struct {
	f   Faults
	mu  sync.Mutex
	rng *rand.Rand
}

func newFaultSource(f Faults, seed uint64) *faultSource {
	return &faultSource{f: f, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// draw returns the fault and delay for the next request.
func (s *faultSource) draw() (fault, time.Duration) {
	if s.f == (Faults{}) {
		return faultNone, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var d time.Duration
	if s.f.DelayMax > 0 {
		d = s.f.DelayMin + time.Duration(s.rng.Int64N(int64(s.f.DelayMax-s.f.DelayMin)+1))
	}
	switch p := s.rng.Float64(); {
	case p < s.f.Reset:
		return faultReset, d
	case p < s.f.Reset+s.f.ServerError:
		return faultServerError, d
	}
	return faultNone, d
}
