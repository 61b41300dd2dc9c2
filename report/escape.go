package report

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// safe returns s fit to print on a terminal: every control character but
// newline and tab (C0, DEL and C1), every bidi control (Unicode's
// Bidi_Control: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and
// every byte that is not UTF-8 is written as a Go escape in hex (\x1b,
// \x0d, \u202e, \xff). Text that came from a results file or a target then can neither
// move the cursor, recolour or retitle the terminal, nor reorder what
// follows it on the line. Safe(Safe(s)) == Safe(s).
func safe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r is a control character other than newline
// and tab, or a bidi control.
func unsafeRune(r rune) bool {
	return r != '\n' && r != '\t' && unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// printf writes the formatted text to w through Safe.
func printf(w io.Writer, format string, args ...any) {
	io.WriteString(w, safe(fmt.Sprintf(format, args...)))
}
