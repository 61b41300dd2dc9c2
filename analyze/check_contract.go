package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckContract, func() checkRun { return &contractCheck{} }) }

// contractCheck judges the failure-table probes of the surface against
// their rows (method.ContractRows).
type contractCheck struct {
	hits []contractHit
}

// contractHit is a contract probe, kept (they are few) to report in order.
type contractHit struct {
	row    int
	source string
	seq    int
	rec    decode.Record
}

// count keeps each contract probe with its row (first pass).
func (c *contractCheck) count(s *surfaceRun, g *groupRun, r *decode.Record, kind uint8, seq int) {
	if kind&kindContract == 0 {
		return
	}
	stream := s.tab.Labels(r).Stream
	for i, row := range method.ContractRows {
		if row.Surface == s.name && row.Stream == stream {
			c.hits = append(c.hits, contractHit{row: i, source: g.source, seq: seq, rec: *r})
		}
	}
}

func (c *contractCheck) judge(e *evidence) (string, string) {
	// in the table's order, then by source, then by send time
	hits := slices.Clone(c.hits)
	slices.SortStableFunc(hits, func(a, b contractHit) int {
		return cmp.Or(a.row-b.row, strings.Compare(a.source, b.source), cmp.Compare(a.rec.Start, b.rec.Start), a.seq-b.seq)
	})
	var rows, bad, unanswered []string
	for _, h := range hits {
		row, r := method.ContractRows[h.row], &h.rec
		rows = append(rows, row.Stream)
		if r.Code == 0 { // no answer: proves nothing about the row
			unanswered = append(unanswered, fmt.Sprintf("%s (%s)", row.Stream, archive.ErrKind(e.tab.Err(r))))
			continue
		}
		if p := checkRow(row, r, e.tab); p != "" {
			bad = append(bad, fmt.Sprintf("%s (%s) [%s]: %s", row.Stream, row.What, row.By(), p))
		}
	}
	switch {
	case len(rows) == 0:
		return Skip, "no contract probe on this surface"
	case len(bad) > 0:
		return Fail, fmt.Sprintf("%d of %d rows wrong: %s", len(bad), len(rows), strings.Join(bad, "; "))
	case len(unanswered) > 0:
		return Inconclusive, fmt.Sprintf("%d of %d rows got no answer, so they prove nothing: %s", len(unanswered), len(rows), strings.Join(unanswered, "; "))
	}
	spec := 0
	for _, h := range hits {
		if method.ContractRows[h.row].By() != method.ByAPI {
			spec++
		}
	}
	by := "all documented by this API alone"
	if spec > 0 {
		by = fmt.Sprintf("%d fixed at least in part by the MCP specification, %d documented by this API alone", spec, len(rows)-spec)
	}
	return Pass, fmt.Sprintf("all %d failure-table rows answer as documented and are classified as answers, not retried (%s)", len(rows), by)
}
