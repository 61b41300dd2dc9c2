package attack

import "github.com/connectbyjbrh/ratecheck/archive"

// Shard is one machine's part of an attack split over N machines: shard I
// of N, I in [0, N). The zero value (and N = 1) is the whole attack.
//
// Every stream's schedule is split exactly: the N shards together send
// every planned request of the profile once, at its planned time. A stream
// with at least N sources is split by source (source j goes to shard
// j mod N), so each address's traffic comes from one machine and its
// budget is judged as on one machine. A stream with fewer sources than
// shards gives each shard one source, i mod k, and the shards on the same
// source take turns with its requests. Without sources a shard sends from
// its machine's own address, labelled source=shard-I, since every machine
// is a distinct client. Its name ("i/n") is the run folder's
// ([archive.Shard]).
type Shard archive.Shard

// ParseShard reads "i/n", such as 0/3 (see [archive.ParseShard]).
func ParseShard(s string) (Shard, error) {
	sh, err := archive.ParseShard(s)
	return Shard(sh), err
}

// Split reports whether s is a proper part of an attack.
func (s Shard) Split() bool { return s.N > 1 }

// String is the shard's name: "i/n".
func (s Shard) String() string { return archive.Shard(s).String() }

// take says whether shard s sends from source j of a stream's k sources
// and, if so, which hits of the stream's schedule: J, J+K, J+2K, ...
func (s Shard) take(j, k int) (ok bool, J, K uint64) {
	switch {
	case !s.Split():
		return true, uint64(j), uint64(k)
	case k >= s.N:
		return j%s.N == s.I, uint64(j), uint64(k)
	case j != s.I%k:
		return false, 0, 0
	}
	// The shards on source j are j, j+k, j+2k, ... < N; this one is the
	// r-th of m, and takes every m-th of the source's hits from the r-th.
	m, r := (s.N-1-j)/k+1, s.I/k
	return true, uint64(j + k*r), uint64(k * m)
}
