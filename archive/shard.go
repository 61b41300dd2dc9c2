package archive

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard names one machine's part of a run split over N machines, as
// run.json writes it ("i/n", such as 0/3, in RunInfo.Shard and
// CapacityInfo.Shard): shard I of N, I in [0, N). The zero value (and
// N = 1) is the whole run. How a run is split is the attack engine's
// (package attack); this is only the name, which readers of a run folder
// need without it.
type Shard struct{ I, N int }

// ParseShard reads "i/n", such as 0/3.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, such as 0/3", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want 0 <= i < n", s)
	}
	return Shard{I: i, N: n}, nil
}

// String is the name as run.json writes it: "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }
