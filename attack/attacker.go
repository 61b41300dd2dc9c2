package attack

import (
	"net/http"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

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
