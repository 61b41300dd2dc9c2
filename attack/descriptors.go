package attack

import "fmt"

// DescriptorMargin is what a run needs besides its connections: the run
// folder's files, the standard streams, the runtime's, a listener.
const DescriptorMargin = 64

// Descriptors estimates the file descriptors a plan's run holds open at
// once: the connections Vegeta opens at the start for each of its
// attackers (one per stream and source), twice over when the target is
// embedded in the same process (each connection is then also the
// target's), and a margin.
func (pl Plan) Descriptors(embedded bool) int {
	conns := len(pl.units()) * vegetaWorkers
	if embedded {
		conns *= 2
	}
	return conns + DescriptorMargin
}

// vegetaWorkers is how many workers, and so connections, a Vegeta
// attacker starts with (vegeta.DefaultWorkers).
const vegetaWorkers = 10

// descriptorError is a run that cannot fit in this process's limit on
// open file descriptors.
type descriptorError struct {
	Need       int
	Soft, Hard uint64
}

func (e *descriptorError) Error() string {
	return fmt.Sprintf("this run needs about %d open file descriptors (a connection per client, two when the target is embedded in this process), above this process's limit of %d (hard limit %d): raise it (ulimit -n %d; above the hard limit, as root or in /etc/security/limits.conf) or plan a smaller run",
		e.Need, e.Soft, e.Hard, e.Need)
}

// checkDescriptors raises the soft descriptor limit to the hard one and
// refuses a job that would still not fit.
func checkDescriptors(job Job, embedded bool) error {
	d, ok := job.(DescriptorUser)
	if !ok {
		return nil
	}
	soft, hard, known := raiseDescriptorLimit()
	if need := d.Descriptors(embedded); known && uint64(need) > soft {
		return &descriptorError{Need: need, Soft: soft, Hard: hard}
	}
	return nil
}
