package decode

import (
	"cmp"
	"slices"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// FromResults makes an input of results the engine holds in memory (a
// run still under way, asked what it needs next), as Read makes one of
// the results file they are written to: the same records, samples and
// tables, in send order. Each result's labels are the ones the engine
// gave it (archive.Result.Labels), taken as they are: its Attack is not
// parsed. The results are read, not kept: the input copies what it needs.
func FromResults(rs []archive.Result, opts Options) *Input {
	in := NewInput()
	rd := &reader{tab: in.tab, opts: opts}
	it := rd.newInterner()
	for i := range rs {
		res := fromVegeta(rs[i].Result)
		in.Records = append(in.Records, it.record(&res, &rs[i].Labels))
		rd.keep(it.takeSamples())
	}
	in.Meta.Samples = rd.samples
	slices.SortStableFunc(in.Records, func(a, b Record) int { return cmp.Compare(a.Start, b.Start) })
	return in
}
