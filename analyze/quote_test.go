package analyze

import "testing"

// TestQuoteBody: a body is quoted as a person reads it: text as is,
// white space as one space, quotes escaped, and only what cannot be
// printed as \xNN.
func TestQuoteBody(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{"<!DOCTYPE HTML>\n<html>\r\n\t<body>Not Found</body>", `"<!DOCTYPE HTML> <html> <body>Not Found</body>"`},
		{`{"error":"rate limited"}`, `"{\"error\":\"rate limited\"}"`},
		{"trop de requêtes — réessayez", `"trop de requêtes — réessayez"`},
		{"a\x00b\xffc\\", `"a\x00b\xffc\\"`},
		{"", `""`},
	}
	for _, tt := range tests {
		if got := quoteBody([]byte(tt.body)); got != tt.want {
			t.Errorf("quoteBody(%q) = %s, want %s", tt.body, got, tt.want)
		}
	}
}
