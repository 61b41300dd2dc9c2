package refserver

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Pool makes the reference target a server of known capacity: every request
// the limiter admits is served by one of Workers workers, which holds it for
// a service time drawn uniformly from [ServiceMin, ServiceMax] (fixed when
// they are equal) before the surface answers it; requests that find every
// worker busy wait, first come first served, up to Queue of them, and beyond
// that are answered 503 with the error code queue_full. The zero value (no
// workers) is no pool: requests are answered at once.
type Pool struct {
	// Workers is the number of requests served at once (0: no pool).
	Workers int
	// ServiceMin and ServiceMax bound a request's service time.
	ServiceMin, ServiceMax time.Duration
	// Queue is the number of requests that may wait for a worker.
	Queue int
}

// Capacity returns the requests per second the pool sustains: Workers over
// the mean service time (0 for no pool).
func (p Pool) Capacity() float64 {
	mean := (p.ServiceMin + p.ServiceMax).Seconds() / 2
	if p.Workers <= 0 || mean <= 0 {
		return 0
	}
	return float64(p.Workers) / mean
}

// String describes the pool, such as "10 workers, service 5ms-35ms, queue
// 1000, capacity 500/s".
func (p Pool) String() string {
	service := p.ServiceMin.String()
	if p.ServiceMax != p.ServiceMin {
		service += "-" + p.ServiceMax.String()
	}
	return fmt.Sprintf("%d workers, service %s, queue %d, capacity %.4g/s", p.Workers, service, p.Queue, p.Capacity())
}

// validate checks a pool that has workers.
func (p Pool) validate() error {
	switch {
	case p.Workers < 0:
		return fmt.Errorf("workers must not be negative, got %d", p.Workers)
	case p.Workers == 0:
		return nil
	case p.ServiceMin < 0 || p.ServiceMax < p.ServiceMin || p.ServiceMax <= 0:
		return fmt.Errorf("service time %v-%v: want 0 <= min <= max and max > 0", p.ServiceMin, p.ServiceMax)
	case p.Queue < 0:
		return fmt.Errorf("queue must not be negative, got %d", p.Queue)
	}
	return nil
}

// ParseService reads a service time: one duration ("20ms") or a range
// "MIN-MAX" ("5ms-35ms") with 0 <= MIN <= MAX and MAX > 0.
func ParseService(spec string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(spec), "-")
	if !isRange {
		b = a
	}
	lo, err1 := time.ParseDuration(a)
	hi, err2 := time.ParseDuration(b)
	if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi <= 0 {
		return 0, 0, errors.New("want a duration or MIN-MAX with 0 <= MIN <= MAX and MAX > 0, such as 20ms or 5ms-35ms")
	}
	return lo, hi, nil
}

// SetService sets the service time from a spec [ParseService] reads; it
// is a flag.Func of a command line.
func (p *Pool) SetService(spec string) (err error) {
	p.ServiceMin, p.ServiceMax, err = ParseService(spec)
	return err
}

// errQueueFull is acquire's answer when every worker is busy and the queue
// is full.
var errQueueFull = errors.New("queue full")

// workerPool is the running pool: a count of busy workers and a FIFO of
// waiting requests, each a channel closed when a worker is handed to it.
// Safe for concurrent use.
type workerPool struct {
	cfg   Pool
	sleep func(context.Context, time.Duration) error

	mu      sync.Mutex
	busy    int
	waiting *list.List // of chan struct{}, oldest first
	rng     *rand.Rand
}

func newWorkerPool(cfg Pool, seed uint64, sleep func(context.Context, time.Duration) error) *workerPool {
	if sleep == nil {
		sleep = clock.Sleep
	}
	return &workerPool{cfg: cfg, sleep: sleep, waiting: list.New(),
		rng: rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, seed+0x14057b7ef767814f))}
}

// acquire takes a worker, waiting in the queue if none is free. It returns
// errQueueFull at once when the queue is full, or ctx's error if ctx ends
// while the request waits (its place in the queue is given up).
func (p *workerPool) acquire(ctx context.Context) error {
	p.mu.Lock()
	if p.busy < p.cfg.Workers {
		p.busy++
		p.mu.Unlock()
		return nil
	}
	if p.waiting.Len() >= p.cfg.Queue {
		p.mu.Unlock()
		return errQueueFull
	}
	handed := make(chan struct{})
	e := p.waiting.PushBack(handed)
	p.mu.Unlock()
	select {
	case <-handed:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	select {
	case <-handed: // a worker was handed over meanwhile: pass it on
		p.mu.Unlock()
		p.release()
	default:
		p.waiting.Remove(e)
		p.mu.Unlock()
	}
	return ctx.Err()
}

// release gives the worker back: to the oldest waiting request, if any.
func (p *workerPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.waiting.Front(); e != nil {
		p.waiting.Remove(e)
		close(e.Value.(chan struct{}))
		return
	}
	p.busy--
}

// load returns the busy workers and the waiting requests.
func (p *workerPool) load() (busy, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy, p.waiting.Len()
}

// service draws a service time, uniform in [ServiceMin, ServiceMax].
func (p *workerPool) service() time.Duration {
	spread := int64(p.cfg.ServiceMax - p.cfg.ServiceMin)
	if spread <= 0 {
		return p.cfg.ServiceMin
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.ServiceMin + time.Duration(p.rng.Int64N(spread+1))
}
