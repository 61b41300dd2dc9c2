package decode

import (
	"cmp"
	"slices"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// FromResults makes an input of results held in memory (a run still under
// way, asked what it needs next), as Read makes one of a results file: the
// same records, samples and tables, in send order. The results are read,
// not kept: the input copies what it needs.
func FromResults(rs []*vegeta.Result, opts Options) *Input {
	in := NewInput()
	rd := &reader{tab: in.tab, opts: opts}
	it := rd.newInterner()
	for _, v := range rs {
		res := fromVegeta(v)
		in.Records = append(in.Records, it.record(&res))
		rd.keep(it.takeSamples())
	}
	in.Meta.Samples = rd.samples
	slices.SortStableFunc(in.Records, func(a, b Record) int { return cmp.Compare(a.Start, b.Start) })
	return in
}
