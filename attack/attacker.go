package attack

import (
	"context"
	"net/http"
	"sync"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// This file holds how every job sends: the one place Vegeta attackers
// are made (NewAttacker) and the one place they are run side by side
// (Send), for the run engine's plans and capacity/runner's steps alike.

// AttackerOptions say how an attacker made by [NewAttacker] sends.
type AttackerOptions struct {
	// Client sends every request; its transport holds the source address.
	Client *http.Client
	// MaxBody caps the bytes of each response body kept (0: DefaultMaxBody).
	MaxBody int64
	// Workers is how many workers the attacker starts with (0: Vegeta's
	// default, vegeta.DefaultWorkers); MaxWorkers how many it may grow to
	// when every worker is waiting for an answer (0: no cap).
	Workers, MaxWorkers uint64
}

// NewAttacker returns a Vegeta attacker set up by o. It is the one place
// Vegeta attackers are made: by the run engine, one per stream and source,
// and by capacity/runner, one per source and step. Pacing is the pacer's
// (see schedule.Waiter): the attacker only sends.
func NewAttacker(o AttackerOptions) *vegeta.Attacker {
	maxBody := o.MaxBody
	if maxBody == 0 {
		maxBody = DefaultMaxBody
	}
	opts := []func(*vegeta.Attacker){vegeta.MaxBody(maxBody), vegeta.Client(o.Client)}
	if o.Workers > 0 {
		opts = append(opts, vegeta.Workers(o.Workers))
	}
	if o.MaxWorkers > 0 {
		opts = append(opts, vegeta.MaxWorkers(o.MaxWorkers))
	}
	return vegeta.NewAttacker(opts...)
}

// Sender is one attacker of a run and what it sends: its targets, its
// pacing (a pacer that waits with a schedule.Waiter) and the labels its
// results carry.
type Sender struct {
	Attacker *vegeta.Attacker
	Targeter vegeta.Targeter
	Pacer    vegeta.Pacer
	// Labels label every result of the sender: Send hands them on with
	// each, and gives Vegeta their string (Labels.String) once, as the
	// attack's name, which it writes in each result's Attack.
	Labels archive.Labels
	// Client, when set, is the attacker's client: its idle connections
	// are closed as soon as its stream has ended (a burst), rather than
	// held idle to the end of the run.
	Client *http.Client
}

// Send runs every sender side by side and hands each result to take, with
// its sender's index and labels, from one goroutine, as it arrives. When
// ctx is done or take returns an error, stop is called (the caller's own
// way to stop what waits: gates, pacers' channels; nil: none) and every
// attacker stops; the results already in flight still come in before Send
// returns, and go to take until it has returned an error, the first of
// which Send returns.
func Send(ctx context.Context, senders []Sender, stop func(), take func(i int, r archive.Result) error) error {
	type indexed struct {
		i int
		r *vegeta.Result
	}
	out := make(chan indexed, 1024)
	var wg sync.WaitGroup
	for i, s := range senders {
		ch := s.Attacker.Attack(s.Targeter, s.Pacer, 0, s.Labels.String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range ch {
				out <- indexed{i, r}
			}
			if s.Client != nil {
				s.Client.CloseIdleConnections()
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	stopAll := func() {
		if stop != nil {
			stop()
		}
		for _, s := range senders {
			s.Attacker.Stop()
		}
	}
	var err error
	done := ctx.Done()
	for {
		select {
		case <-done:
			stopAll()
			done = nil
		case x, ok := <-out:
			if !ok {
				return err
			}
			if err == nil {
				if err = take(x.i, archive.Result{Result: x.r, Labels: senders[x.i].Labels}); err != nil {
					stopAll()
				}
			}
		}
	}
}
