package redact

import (
	"io"
	"regexp"
)

// text returns s, a line of free text such as a log message, with every
// credential value it shows replaced by redacted:
//
//   - the value of a header line ("Set-Cookie: a=b") whose name is a
//     credential, up to the end of the line — a real line break, or one
//     written as \r or \n in quoted text, as Go's HTTP transport quotes the
//     unsolicited responses it logs;
//   - the value of a name=value pair (a query parameter, a cookie) whose
//     name is a credential;
//   - the password of a URL (scheme://user:password@host);
//   - a Bearer or Basic authorization, wherever it appears.
//
// It errs towards redacting too much: the rest of a line after a
// credential header is gone too.
func text(s string) string {
	s = headerLine.ReplaceAllStringFunc(s, func(m string) string {
		sub := headerLine.FindStringSubmatch(m)
		if !is(unescaped(sub[2])) {
			return m
		}
		return sub[1] + sub[2] + sub[3] + redacted
	})
	s = pair.ReplaceAllStringFunc(s, func(m string) string {
		sub := pair.FindStringSubmatch(m)
		if !is(unescaped(sub[1])) || sub[2] == "" {
			return m
		}
		return sub[1] + "=" + redacted
	})
	s = userinfo.ReplaceAllString(s, "${1}"+redacted+"@")
	return scheme.ReplaceAllString(s, "${1} "+redacted)
}

// unescaped turns every escape sequence of quoted text (\x95, \u00e9, \t)
// in name into a separator: what it stood for is not a letter of a word
// (%q escapes only what is not printable).
func unescaped(name string) string { return escape.ReplaceAllString(name, "-") }

var (
	escape = regexp.MustCompile(`\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)`)
	// headerLine is a header (any name: a hostile target's need not be a
	// token) at the start of s or of a line (a real line break, or one
	// escaped as \r or \n), up to the end of that line.
	headerLine = regexp.MustCompile(`(^|[\r\n]|\\[rn]|")((?:[^\s:"\\]|\\[^rn"])+)(:[ \t]*)((?:[^\r\n\\]|\\[^rn])*)`)
	// pair is name=value, the value up to a separator, a quote or a line
	// break (escaped ones too: \r, \n, \" end it; \x8e does not).
	pair = regexp.MustCompile(`((?:[^\s=&;,?#/"'\\<>]|\\[^rn"])+)=((?:\\"[^"]*\\"|"[^"]*"|\\[^rn"]|[^&;,\s"'\\<>])*)`)
	// userinfo is the password of a URL.
	userinfo = regexp.MustCompile(`(://[^/?#\s:@"]*:)[^@/?#\s"]*@`)
	// scheme is an Authorization value.
	scheme = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[0-9A-Za-z._~+/=-]+`)
)

// Writer returns a writer that writes to w every Write's text passed
// through text. It redacts each Write on its own, so a credential split
// across two is missed: give it whole lines, as the standard log package
// does (one Write per entry). main routes log's output through it, since
// net/http logs there, and may log what a hostile target sent.
func Writer(w io.Writer) io.Writer { return textWriter{w} }

type textWriter struct{ w io.Writer }

func (t textWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
