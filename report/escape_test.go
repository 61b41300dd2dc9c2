package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
)

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, µs and ✓":       "plain text, µs and ✓",
		"two\nlines\tand a tab":      "two\nlines\tand a tab",
		"\x1b[31mred\x1b[0m":         `\x1b[31mred\x1b[0m`,
		"title\x1b]0;pwned\x07":      `title\x1b]0;pwned\x07`,
		"back\rspace\b\x00\x7f":      `back\x0dspace\x08\x00\x7f`,
		"c1 \u009b31m":               `c1 \u009b31m`,
		"file\u202egnp.exe":          `file\u202egnp.exe`,
		"\u2066isolate\u2069 \u200e": `\u2066isolate\u2069 \u200e`,
		"arabic mark \u061c":         `arabic mark \u061c`,
		"bad \xff\xfe utf-8":         `bad \xff\xfe utf-8`,
	} {
		got := safe(in)
		if got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
		if safe(got) != got {
			t.Errorf("Safe(Safe(%q)) = %q, not idempotent", in, safe(got))
		}
	}
}

// hostile is text a results file or a target may carry.
const hostile = "x\x1b[2J\x1b]0;t\x07\u202e\u009b\r\xff"

// fill sets every exported string of v (a pointer) to hostile, giving
// every nil slice and pointer one element to fill and every map one key.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() && v.CanSet() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		if !v.IsNil() {
			fill(v.Elem(), depth+1)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(hostile)
		}
	case reflect.Slice:
		if v.Len() == 0 && v.CanSet() {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String && v.CanSet() {
			if v.IsNil() {
				v.Set(reflect.MakeMap(v.Type()))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, depth+1)
			v.SetMapIndex(reflect.ValueOf(hostile).Convert(v.Type().Key()), e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// TestTerminalOutputIsSafe: whatever text a report carries in any of its
// strings (from a results file's labels and errors, or a target's
// answers), the tables, the fleet tables and the comparison print no
// control character but newline and tab, no bidi control and no invalid
// UTF-8.
func TestTerminalOutputIsSafe(t *testing.T) {
	var rep analyze.Report
	fill(reflect.ValueOf(&rep), 0)
	var jr jitter.Report
	fill(reflect.ValueOf(&jr), 0)
	var base, run analyze.RunSummary
	fill(reflect.ValueOf(&base), 0)
	fill(reflect.ValueOf(&run), 0)
	run.Surfaces[0].Model, run.Verdict = "other", analyze.Fail // regressions, quoting both
	base.Verdict = analyze.Pass
	c := analyze.Compare(base, run, analyze.CompareOptions{MaxP99Increase: 0.1})
	for name, render := range map[string]func(*bytes.Buffer) error{
		"Tables":       func(b *bytes.Buffer) error { return Tables(b, &rep) },
		"FleetTables":  func(b *bytes.Buffer) error { return FleetTables(b, &jr, hostile, hostile) },
		"CompareTable": func(b *bytes.Buffer) error { return CompareTable(b, c) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := b.String()
		if !strings.Contains(out, `x\x1b[2J`) {
			t.Errorf("%s: the hostile text is not in the output, escaped (the test fills nothing?):\n%s", name, out)
		}
		if i := strings.IndexFunc(out, unsafeRune); i >= 0 || !utf8.ValidString(out) {
			t.Errorf("%s: printed %q raw at byte %d:\n%s", name, out[max(i, 0):min(max(i, 0)+8, len(out))], i, out)
		}
		if strings.ContainsFunc(out, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }) {
			t.Errorf("%s: printed a bidi control", name)
		}
	}
}

// FuzzSafe: whatever the bytes, Safe's output is valid UTF-8 without a
// control character (but newline and tab) or a bidi control, keeps every
// safe character, and Safe leaves it as it is.
func FuzzSafe(f *testing.F) {
	f.Add(hostile)
	f.Add("plain\n\ttext ✓")
	f.Fuzz(func(t *testing.T, s string) {
		out := safe(s)
		if !utf8.ValidString(out) || strings.ContainsFunc(out, unsafeRune) || safe(out) != out {
			t.Fatalf("Safe(%q) = %q", s, out)
		}
		if !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) && out != s {
			t.Fatalf("Safe(%q) = %q changed safe text", s, out)
		}
	})
}
