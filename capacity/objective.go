package capacity

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// defaultErrorBudget is the share of requests that may fail when no error
// budget is given: 1 %.
const defaultErrorBudget = 0.01

// SLO is a latency objective: the Quantile of latency (0.99 for p99) must
// be at most Max. The zero value is no objective; [ParseSLO] builds one.
type SLO struct {
	// Quantile is the quantile judged, in (0, 1): 0.99 for p99.
	Quantile float64
	// Max is the most that quantile of latency may be.
	Max time.Duration
	// text is what was parsed, kept so that String gives it back.
	text string
}

// String returns the objective as it is written: "p99<=100ms".
func (s SLO) String() string {
	if s.text != "" {
		return s.text
	}
	if s.Quantile == 0 {
		return ""
	}
	return "p" + strconv.FormatFloat(s.Quantile*100, 'f', -1, 64) + "<=" + s.Max.String()
}

// QuantileName names the quantile judged as the objective does: "p99",
// "p99.9".
func (s SLO) QuantileName() string {
	return "p" + strconv.FormatFloat(100*s.Quantile, 'g', 10, 64)
}

// ValueError is a bad value of one of the objective's fields: the field
// as run.json names it (slo, error_budget), the value given and what is
// wanted. It names no flag: a command that read the value from one says
// which (a value read back from run.json is not a flag's).
type ValueError struct {
	Field, Value, Want string
}

func (e *ValueError) Error() string { return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Want) }

// sloSyntax is pNN or pNN.N (any number of decimals), "<=", a duration.
var sloSyntax = regexp.MustCompile(`^p([0-9]+(?:\.[0-9]+)?)<=(.+)$`)

// ParseSLO parses a latency objective such as "p99<=100ms" or
// "p99.9<=1.5s": p and a percentile above 0 and below 100, "<=", and a Go
// duration above zero (spaces are ignored). Its errors are *ValueError
// of field slo.
func ParseSLO(s string) (SLO, error) {
	text := strings.Join(strings.Fields(s), "")
	m := sloSyntax.FindStringSubmatch(text)
	if m == nil {
		return SLO{}, &ValueError{"slo", s, "want a quantile, <= and a duration, such as p99<=100ms or p99.9<=1s"}
	}
	pct, err := strconv.ParseFloat(m[1], 64)
	if err != nil || pct <= 0 || pct >= 100 {
		return SLO{}, &ValueError{"slo", s, fmt.Sprintf("the quantile p%s must be above p0 and below p100, such as p95 or p99.9", m[1])}
	}
	d, err := time.ParseDuration(m[2])
	if err != nil || d <= 0 {
		return SLO{}, &ValueError{"slo", s, fmt.Sprintf("%q is not a duration above zero (want such as 100ms or 1.5s)", m[2])}
	}
	return SLO{Quantile: pct / 100, Max: d, text: text}, nil
}

// ParseErrorBudget parses an error budget: the share of requests that may
// fail, a ratio above 0 and below 1 such as 0.01 (or a percentage such as
// 1%). Its errors are *ValueError of field error_budget.
func ParseErrorBudget(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, &ValueError{"error_budget", s, "want the share of requests that may fail, a ratio such as 0.01"}
	}
	v /= scale
	if v <= 0 || v >= 1 {
		return 0, &ValueError{"error_budget", s, "want a ratio above 0 and below 1, such as 0.01 (1 % of requests may fail)"}
	}
	return v, nil
}

// Objective is what a step is held to: a latency objective and an error
// budget. The zero value is invalid; [Objective.Validate] says why.
type Objective struct {
	// SLO is the latency objective, measured from intended send times.
	SLO SLO
	// ErrorBudget is the share of requests that may fail, in (0, 1):
	// transport faults and every non-2xx answer, a 429 included.
	ErrorBudget float64
}

// Validate reports what makes o unusable, or nil.
func (o Objective) Validate() error {
	if o.SLO.Quantile <= 0 || o.SLO.Quantile >= 1 || o.SLO.Max <= 0 {
		return fmt.Errorf("latency objective %q: want a quantile in (0, 1) and a bound above zero", o.SLO.String())
	}
	if o.ErrorBudget <= 0 || o.ErrorBudget >= 1 {
		return fmt.Errorf("error budget %v: want a ratio above 0 and below 1", o.ErrorBudget)
	}
	return nil
}

// Objective names what a search was held to, as a key its runs are
// compared by: the latency objective, written the same way however it was
// spelt (p99<=0.1s is p99<=100ms), and the error budget, such as
// "p99<=100ms, error budget 1%".
func (r *Result) Objective() string {
	slo := r.SLO
	if o, err := ParseSLO(r.SLO); err == nil {
		slo = o.QuantileName() + "<=" + o.Max.String()
	}
	return slo + ", error budget " + strconv.FormatFloat(100*r.ErrorBudget, 'g', 10, 64) + "%"
}

// QuantileName names the quantile the search judged, such as "p99"
// ("quantile" when its objective cannot be read).
func (r *Result) QuantileName() string {
	o, err := ParseSLO(r.SLO)
	if err != nil {
		return "quantile"
	}
	return o.QuantileName()
}
