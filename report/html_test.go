package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// flood is a run against a sliding log of 10 per second that leaks one
// request: a burst over the limit from 127.0.0.1, a trickle from
// 127.0.0.2, on the REST surface.
func flood() (*decode.Input, analyze.Config) {
	const L, W = 10, time.Second
	cfg := analyze.Config{Window: W, Limits: map[string]int{method.REST: L}, Run: "results/test-verify", Target: "http://127.0.0.1:8080", Charts: true}
	in := decode.NewInput()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	var log []int64
	ms := int64(time.Millisecond)
	for i := range 300 {
		src, s := "127.0.0.1", t0+int64(i)*10*ms
		if i%5 == 4 {
			src = "127.0.0.2"
		}
		code, body := uint16(200), []byte(`{"results":[]}`)
		if src == "127.0.0.1" {
			n := 0
			for _, t := range log {
				if s-t < int64(W) {
					n++
				}
			}
			if n >= L && i != 150 { // request 150 leaks
				code, body = 429, []byte(`{"error":{"code":"rate_limited"}}`)
			}
			log = append(log, s)
		}
		in.Add(archive.Labels{Surface: method.REST, Source: src, Stream: method.StreamFlood}, s, s+2*ms, code, &decode.Answer{Body: body})
	}
	return in, cfg
}

// TestHTML: the page holds the verdict, the checks and three charts per
// surface, in one SVG, none empty, with the limit, the first 429 and the leak
// marked, and it references nothing outside itself.
func TestHTML(t *testing.T) {
	in, cfg := flood()
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(&buf, in, rep, cfg, nil); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1)
	if len(svgs) != 1 || strings.Count(svgs[0], "fill:#FFFFFF") != 3 {
		t.Fatalf("%d figures, want 1 of three charts (one surface)", len(svgs))
	}
	for i, svg := range strings.Split(svgs[0], "fill:#FFFFFF")[1:] {
		if strings.Count(svg, "<path") < 10 {
			t.Errorf("chart %d draws almost nothing:\n%.300s", i, svg)
		}
	}
	for _, want := range []string{"FAIL", "rolling", "leak", "limit 10", "first 429", "surely in the window", "p99", "refused (429, or as a contract says)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`(src|href)=|url\(|@import`).FindString(page); m != "" {
		t.Errorf("the page fetches something (%q): it must open offline", m)
	}
}

// TestHTMLInChromium renders the page in headless Chromium: it loads with
// no console error, the screenshot shows the charts drew (many colours,
// not a blank page), and every legend entry's series is visible beside its
// legend sample. For that, every coloured path of the figure is given a
// colour of its own before rendering; the paths of one chart drawn in one
// style (colour, width, dashes) are one legend entry's (or a few sharing
// it), and the last of them is a legend sample (gonum draws the legend
// after the data). The screenshot must show the others at least half as
// many pixels as that sample (a marker as short as the first 429's is no
// longer than a few samples): a series hidden under another, on an axis
// or drawn nowhere shows none. (Two entries of one chart in one style,
// such as a fleet's attempts 1 and 6, are held as one.) Skipped where
// Chromium is absent.
func TestHTMLInChromium(t *testing.T) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium on PATH (apt-get install chromium; .ci/run installs it)")
	}
	in, cfg := flood()
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(&buf, in, rep, cfg, nil); err != nil {
		t.Fatal(err)
	}
	html, entries := recolour(t, buf.String())
	dir := t.TempDir()
	page := filepath.Join(dir, HTMLFile)
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// at twice the pixels, a line of the charts covers whole pixels in its
	// own colour, not only edges blended with the background
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--crash-dumps-dir="+filepath.Join(dir, "crashes"), "--enable-logging=stderr", "--v=0",
		"--force-device-scale-factor=2", "--window-size=1200,2400", "--screenshot="+shot, "file://"+page)
	// Chromium sets two variables at start, FC_FONTATIONS (from a thread
	// of its pool) and DBUS_SESSION_BUS_ADDRESS, while other threads read
	// the environment: glibc's setenv of a variable not yet set moves the
	// environment array, and a getenv in libdbus then read the array it
	// freed (its crash reports: SIGSEGV at address 0 in getenv, six of
	// them, 1 run in a few hundred on a loaded host; a debugger on setenv
	// shows those two calls, and no other). Both set beforehand, setenv
	// replaces in place or leaves them, and the array never moves. Its
	// configuration under the test's folder keeps any crash report there.
	cmd.Env = append(os.Environ(), "FC_FONTATIONS=1", "DBUS_SESSION_BUS_ADDRESS=disabled:", "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		// A crash of Chromium's fails the test as any other: say how long
		// it ran, whether it wrote the screenshot, and keep what its crash
		// reporter wrote (outside the test's own folder, which goes), so
		// that it can be placed.
		var dumps []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(p, "Crash Reports") && !strings.Contains(p, "crashes") {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil {
				if f, err := os.CreateTemp("", "ratecheck-chromium-crash-*-"+d.Name()); err == nil {
					f.Write(b)
					f.Close()
					dumps = append(dumps, f.Name())
				}
			}
			return nil
		})
		_, shotErr := os.Stat(shot)
		t.Fatalf("chromium: %v after %v (screenshot: %v; crash reports: %v)\n%s", err, time.Since(began).Round(time.Millisecond), shotErr == nil, dumps, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "CONSOLE") && (strings.Contains(line, "ERROR") || strings.Contains(line, "Uncaught")) {
			t.Errorf("console error: %s", line)
		}
	}
	pf, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatal(err)
	}
	if n := colours(img); n < 20 {
		t.Errorf("the screenshot has %d colours: the charts did not draw", n)
	}
	shown := pixelCounts(img)
	if len(entries) < 8 {
		t.Fatalf("%d styles of coloured lines in the figure, want the window chart's, the outcomes' and the latencies'", len(entries))
	}
	for _, e := range entries {
		series := 0
		for _, c := range e.series {
			series += shown[c]
		}
		sample := shown[e.sample]
		t.Logf("chart %d, %s: %d pixels of the series, %d of the legend sample", e.chart, e.style, series, sample)
		if sample == 0 || 2*series < sample {
			t.Errorf("chart %d: the series drawn %s show %d pixels beside their legend sample's %d: a legend entry without a visible line", e.chart, e.style, series, sample)
		}
	}
}

// legendStyle is one style of coloured path of one chart, each of its
// paths recoloured apart: the last one, a legend sample, and the others.
type legendStyle struct {
	chart  int
	style  string
	series []color.RGBA
	sample color.RGBA
}

// pathStyle matches a coloured path's style and its stroke colour (black
// and grey are the axes, the grid and the limit line).
var pathStyle = regexp.MustCompile(`style="(fill:none;stroke:(#[0-9A-F]{6});[^"]*)"`)

// recolour gives every coloured path of the page's figure a colour of its
// own, and returns them by chart and style (see TestHTMLInChromium).
func recolour(t *testing.T, page string) (string, []legendStyle) {
	t.Helper()
	const background = `style="fill:#FFFFFF"`
	charts := strings.Split(page, background)
	if len(charts) < 4 {
		t.Fatalf("%d charts, want at least 3", len(charts)-1)
	}
	var styles []legendStyle
	k := 0
	pick := func() color.RGBA { // a 9×9×9 grid of colours 28 levels apart
		k++
		return color.RGBA{R: uint8(20 + 28*(k%9)), G: uint8(20 + 28*(k/9%9)), B: uint8(20 + 28*(k/81%9)), A: 0xff}
	}
	for i := 1; i < len(charts); i++ {
		byStyle := map[string]*legendStyle{}
		var order []string
		charts[i] = pathStyle.ReplaceAllStringFunc(charts[i], func(m string) string {
			sub := pathStyle.FindStringSubmatch(m)
			if sub[2] == "#000000" || sub[2] == "#808080" {
				return m
			}
			st := byStyle[sub[1]]
			if st == nil {
				st = &legendStyle{chart: i - 1, style: sub[1]}
				byStyle[sub[1]] = st
				order = append(order, sub[1])
			}
			c := pick()
			st.series = append(st.series, c)
			return strings.Replace(m, sub[2], hexColour(c), 1)
		})
		for _, s := range order {
			st := byStyle[s]
			st.sample, st.series = st.series[len(st.series)-1], st.series[:len(st.series)-1]
			styles = append(styles, *st)
		}
	}
	return strings.Join(charts, background), styles
}

func hexColour(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// pixelCounts counts the pixels of img by colour, each snapped to the
// grid recolour picks from (within 8 levels in every channel): the
// inside of a line, not its edges blended with what is under them.
func pixelCounts(img image.Image) map[color.RGBA]int {
	n := map[color.RGBA]int{}
	b := img.Bounds()
	snap := func(v uint32) (uint8, bool) {
		x := int(v >> 8)
		g := (x - 20 + 14) / 28 * 28
		return uint8(20 + g), x-20-g >= -8 && x-20-g <= 8 && x >= 12
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			R, okR := snap(r)
			G, okG := snap(g)
			B, okB := snap(bl)
			if okR && okG && okB {
				n[color.RGBA{R: R, G: G, B: B, A: 0xff}]++
			}
		}
	}
	return n
}

// colours counts the distinct colours of img.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

// TestHTMLFleet: a run with a fleet gets the chart of its attempt waves.
func TestHTMLFleet(t *testing.T) {
	in, cfg := flood()
	ms := int64(time.Millisecond)
	t0 := in.Records[len(in.Records)-1].Start
	for c := range 10 {
		for a := 1; a <= 3; a++ {
			s := t0 + int64(a)*500*ms + int64(c)*7*ms
			in.Add(archive.Labels{Surface: method.REST, Source: "127.0.0.3", Stream: method.StreamFleet,
				Fleet: &archive.FleetTag{Client: c, Request: 1, Attempt: a}}, s, s+ms, 429, nil)
		}
	}
	var buf bytes.Buffer
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := HTML(&buf, in, rep, cfg, nil); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "<svg"); n != 2 || !strings.Contains(page, "Fleet: when each attempt went out") || !strings.Contains(page, "attempt 3") {
		t.Errorf("%d charts, fleet chart drawn: %v", n, strings.Contains(page, "Fleet: when each attempt went out"))
	}
}

// TestHTMLFarApart: results further apart than an int64 of nanoseconds
// holds (a hostile or corrupt file: 1690 and 1990, or the ends of the
// Unix-ns range), in any order, make a page and a summary, never a panic
// or a negative span.
func TestHTMLFarApart(t *testing.T) {
	for _, starts := range [][]int64{
		{time.Date(1690, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
		{math.MinInt64, 0, math.MaxInt64 - int64(time.Second)},
		{math.MaxInt64 - int64(time.Second), math.MinInt64}, // out of order
	} {
		in := decode.NewInput()
		for _, s := range starts {
			in.Add(archive.Labels{Surface: method.REST, Source: "127.0.0.1", Stream: "s"},
				s, s+int64(time.Millisecond), 200, &decode.Answer{Body: []byte(`{"results":[]}`)})
		}
		cfg := analyze.Config{Window: time.Second, Limits: map[string]int{method.REST: 10}, Charts: true}
		rep, err := analyze.Analyze(in, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := HTML(&buf, in, rep, cfg, nil); err != nil || !strings.Contains(buf.String(), "<svg") {
			t.Errorf("%v: %v", starts, err)
		}
		if s := analyze.Summarize(in, rep); len(s.Surfaces) != 1 || !(s.Surfaces[0].Rate > 0) {
			t.Errorf("%v: summary %+v, want a positive rate", starts, s.Surfaces)
		}
	}
}

// TestHTMLFleetLeads: a fleet run's page leads with the fleet's verdict
// (in its title and first heading), its checks follow, and the limits'
// verdict comes after, named as such.
func TestHTMLFleetLeads(t *testing.T) {
	in, cfg := flood()
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fl := &jitter.Report{Verdict: analyze.Fail, Clients: 100, Requests: 200,
		Checks: []analyze.Check{{Name: "collisions", Verdict: analyze.Fail, Detail: "lockstep"}}}
	var buf bytes.Buffer
	if err := HTML(&buf, in, rep, cfg, fl); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	h1 := regexp.MustCompile(`<h1>.*?</h1>`).FindString(page)
	if !strings.Contains(h1, "fleet") || !strings.Contains(h1, "FAIL") || !strings.Contains(page, "<title>ratecheck fail:") {
		t.Errorf("the page leads with %q", h1)
	}
	if i, j := strings.Index(page, "collisions"), strings.Index(page, "<h2>limits:"); i < 0 || j < i {
		t.Errorf("the fleet's checks (at %d) do not come before the limits' verdict (at %d)", i, j)
	}
}

// TestHTMLNeedsTheWindowSeries: the page draws the window chart from what
// the analysis kept, never a model of its own: an analysis made without
// Config.Charts is refused, naming it.
func TestHTMLNeedsTheWindowSeries(t *testing.T) {
	t.Parallel()
	in, cfg := flood()
	cfg.Charts = false
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(&buf, in, rep, cfg, nil); err == nil || !strings.Contains(err.Error(), "Config.Charts") {
		t.Errorf("HTML of an analysis without its window series: %v, want an error naming Config.Charts", err)
	}
}
