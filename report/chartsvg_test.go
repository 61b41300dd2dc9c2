package report

import (
	"bytes"
	"encoding/xml"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// svgNode is any element of an SVG document.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []svgNode  `xml:",any"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// svgChart is what a test reads of a chart: its polylines with their
// stroke colour, and its texts with where they are drawn (in the chart's
// own flipped coordinates, as its paths are).
type svgChart struct {
	lines []svgLine
	texts []svgText
}

type svgLine struct {
	stroke string
	pts    [][2]float64
}

type svgText struct {
	x, y    float64
	text    string
	rotated bool
}

// parseCharts reads the charts of one SVG element: each begins with its
// white background, in drawing order.
func parseCharts(t *testing.T, svg string) []svgChart {
	t.Helper()
	var root svgNode
	if err := xml.Unmarshal([]byte(svg), &root); err != nil {
		t.Fatalf("the chart is not XML: %v", err)
	}
	var cs []svgChart
	var walk func(n svgNode, rotated bool)
	walk = func(n svgNode, rotated bool) {
		rotated = rotated || strings.Contains(n.attr("transform"), "rotate")
		switch n.XMLName.Local {
		case "path":
			if strings.Contains(n.attr("style"), "fill:#FFFFFF") {
				cs = append(cs, svgChart{})
			} else if l, ok := parsePath(n.attr("d"), n.attr("style")); ok && len(cs) > 0 {
				cs[len(cs)-1].lines = append(cs[len(cs)-1].lines, l)
			}
		case "text":
			x, _ := strconv.ParseFloat(n.attr("x"), 64)
			y, _ := strconv.ParseFloat(n.attr("y"), 64)
			if len(cs) > 0 { // scale(1, -1): y as the paths have it
				cs[len(cs)-1].texts = append(cs[len(cs)-1].texts, svgText{x: x, y: -y, text: strings.TrimSpace(n.Text), rotated: rotated})
			}
		}
		for _, k := range n.Kids {
			walk(k, rotated)
		}
	}
	walk(root, false)
	return cs
}

// parsePath reads a path of straight segments (M and L only).
func parsePath(d, style string) (svgLine, bool) {
	m := regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})`).FindStringSubmatch(style)
	if m == nil || strings.ContainsAny(d, "AaCcQqZz") {
		return svgLine{}, false
	}
	l := svgLine{stroke: strings.ToUpper(m[1])}
	for _, p := range regexp.MustCompile(`[ML]([-0-9.e]+),([-0-9.e]+)`).FindAllStringSubmatch(d, -1) {
		x, _ := strconv.ParseFloat(p[1], 64)
		y, _ := strconv.ParseFloat(p[2], 64)
		l.pts = append(l.pts, [2]float64{x, y})
	}
	return l, len(l.pts) > 0
}

// axis is a linear map from a value to a pixel, read from a chart's tick
// marks and their labels.
type axis struct{ a, b float64 }

func (ax axis) value(px float64) float64 { return (px - ax.a) / ax.b }

// axes reads both axes of c: the major tick marks (black segments 8
// points long, at the chart's left edge for y, its bottom for x), paired
// in order with the numeric labels beside them.
func (c svgChart) axes(t *testing.T) (x, y axis, xLabels []string) {
	t.Helper()
	var xt, yt []float64
	for _, l := range c.lines {
		if l.stroke != "#000000" || len(l.pts) != 2 {
			continue
		}
		p, q := l.pts[0], l.pts[1]
		switch {
		case p[1] == q[1] && math.Abs(q[0]-p[0]-8) < 0.01:
			yt = append(yt, p[1])
		case p[0] == q[0] && math.Abs(q[1]-p[1]-8) < 0.01:
			xt = append(xt, p[0])
		}
	}
	slices.Sort(xt)
	slices.Sort(yt)
	if len(yt) == 0 {
		t.Fatal("no tick marks on the y axis")
	}
	var xl, yl []svgText
	for _, tx := range c.texts {
		if _, err := strconv.ParseFloat(tx.text, 64); err != nil || tx.rotated {
			continue
		}
		if tx.y < yt[0]-4 { // below the plot's bottom: the time axis
			xl = append(xl, tx)
		} else {
			yl = append(yl, tx)
		}
	}
	slices.SortFunc(xl, func(a, b svgText) int { return int(math.Copysign(1, a.x-b.x)) })
	slices.SortFunc(yl, func(a, b svgText) int { return int(math.Copysign(1, a.y-b.y)) })
	fit := func(px []float64, ls []svgText) axis {
		if len(px) != len(ls) || len(px) < 2 {
			t.Fatalf("%d tick marks, %d labels", len(px), len(ls))
		}
		v0, _ := strconv.ParseFloat(ls[0].text, 64)
		v1, _ := strconv.ParseFloat(ls[len(ls)-1].text, 64)
		b := (px[len(px)-1] - px[0]) / (v1 - v0)
		return axis{a: px[0] - b*v0, b: b}
	}
	for _, l := range xl {
		xLabels = append(xLabels, l.text)
	}
	return fit(xt, xl), fit(yt, yl), xLabels
}

// valueAt is the height of the step line l at time x (a pixel): the
// horizontal segment that spans x.
func (l svgLine) valueAt(x float64) (float64, bool) {
	for i := 1; i < len(l.pts); i++ {
		p, q := l.pts[i-1], l.pts[i]
		if p[1] == q[1] && p[0] <= x && x < q[0] {
			return p[1], true
		}
	}
	return 0, false
}

// series is the longest line of c drawn in colour (the legend's sample of
// it is two points).
func (c svgChart) series(colour string) svgLine {
	var best svgLine
	for _, l := range c.lines {
		if l.stroke == colour && len(l.pts) > len(best.pts) {
			best = l
		}
	}
	return best
}

// probesAndWave is a run with probes sent one per 120 ms for 3 s, all
// admitted, and a wave of 100 retries within 14 ms, all refused, 1 s after
// the last probe.
func probesAndWave() (*decode.Input, analyze.Config) {
	in := decode.NewInput()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	ms := int64(time.Millisecond)
	lb := archive.Labels{Surface: method.REST, Source: "127.0.0.1", Stream: method.StreamFlood}
	for i := range 26 {
		s := t0 + int64(i)*120*ms
		in.Add(lb, s, s+ms, 200, &decode.Answer{Body: []byte(`{"results":[]}`)})
	}
	wave := t0 + 4*int64(time.Second)
	for i := range 100 {
		s := wave + int64(i)*14*ms/100
		in.Add(lb, s, s+ms, 429, &decode.Answer{Body: []byte(`{"error":{"code":"rate_limited"}}`)})
	}
	return in, analyze.Config{Window: time.Second, Limits: map[string]int{method.REST: 30}, Run: "results/test", Charts: true}
}

// TestOutcomeChartHeights reads the SVG of "Requests by outcome", maps
// each series' height back through the chart's own y axis and its time
// through the x axis, and compares it bin by bin with the counts of the
// records, computed here: a probe every 120 ms is 1 in every bin holding
// one and 0 between them, and the wave of 100 retries within 14 ms is
// drawn only over the bins it fell in. The three charts share one time
// axis (the same tick labels at the same places), drawn one above the
// other.
func TestOutcomeChartHeights(t *testing.T) {
	in, cfg := probesAndWave()
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(&buf, in, rep, cfg, nil); err != nil {
		t.Fatal(err)
	}
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(buf.String(), -1)
	if len(svgs) != 1 {
		t.Fatalf("%d figures, want 1 (one surface)", len(svgs))
	}
	charts := parseCharts(t, svgs[0])
	if len(charts) != 3 {
		t.Fatalf("%d charts, want 3", len(charts))
	}
	var ticks [3][]string
	var xs [3]axis
	for i, c := range charts {
		xs[i], _, ticks[i] = c.axes(t)
	}
	if len(ticks[0]) == 0 || ticks[0][0] != "0" {
		t.Errorf("the time axis is labelled %v: want it to start at 0, the run's first request", ticks[0])
	}
	for i := 1; i < 3; i++ {
		if !slices.Equal(ticks[i], ticks[0]) || math.Abs(xs[i].a-xs[0].a) > 0.05 || math.Abs(xs[i].b-xs[0].b) > 0.05 {
			t.Errorf("chart %d's time axis %v (%+v) is not chart 0's %v (%+v)", i, ticks[i], xs[i], ticks[0], xs[0])
		}
	}
	oc := charts[1]
	width := binWidthOf(t, oc)
	xa, ya, _ := oc.axes(t)
	first := in.Records[0].Start
	counts := map[int64]map[uint16]int{}
	last := int64(0)
	for _, r := range in.Records {
		k := (r.Start - first) / int64(width)
		if counts[k] == nil {
			counts[k] = map[uint16]int{}
		}
		counts[k][r.Code]++
		last = max(last, k)
	}
	for _, s := range []struct {
		colour string
		code   uint16
	}{{"#2E7D32", 200}, {"#C62828", 429}} {
		line := oc.series(s.colour)
		for k := int64(0); k <= last; k++ {
			mid := (float64(k)+0.5)*width.Seconds() + 0 // the first request is at 0 s
			px, ok := line.valueAt(xa.a + xa.b*mid)
			if !ok {
				t.Fatalf("code %d: no segment over bin %d (%.3fs)", s.code, k, mid)
			}
			got, want := ya.value(px), float64(counts[k][s.code])
			if math.Abs(got-want) > 0.02*max(1, want) {
				t.Errorf("code %d, bin %d (%.3fs): drawn at %.2f, the records hold %v", s.code, k, mid, got, want)
			}
		}
	}
}

// binWidthOf reads the bin width from the y label ("requests per 5ms").
func binWidthOf(t *testing.T, c svgChart) time.Duration {
	t.Helper()
	for _, tx := range c.texts {
		if w, ok := strings.CutPrefix(tx.text, "requests per "); ok {
			d, err := time.ParseDuration(w)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no y label saying the bin width")
	return 0
}
