package scenario

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/connectbyjbrh/ratecheck/internal/human"
)

// This file says a profile's YAML errors in the profile's words: a key no
// part of a profile has as the part that lacks it (with the key meant),
// and a syntax error at the line the document stops parsing, not at the
// line of the mapping around it.

// parts are the parts of a profile by their Go type, as a person writing
// one names them.
var parts = map[string]struct {
	words string
	typ   reflect.Type
}{
	"Profile":   {"the profile", reflect.TypeFor[Profile]()},
	"Policy":    {"the policy", reflect.TypeFor[Policy]()},
	"Stream":    {"a stream", reflect.TypeFor[Stream]()},
	"Request":   {"a request", reflect.TypeFor[Request]()},
	"PacerSpec": {"a pacer", reflect.TypeFor[PacerSpec]()},
	"Step":      {"a step of a pacer", reflect.TypeFor[Step]()},
	"Contract":  {"the contract", reflect.TypeFor[Contract]()},
	"Route":     {"a route", reflect.TypeFor[Route]()},
	"Identity":  {"an identity", reflect.TypeFor[Identity]()},
	"Limit":     {"a limit", reflect.TypeFor[Limit]()},
	"Refusal":   {"a refusal", reflect.TypeFor[Refusal]()},
}

// yamlKeys are the keys a struct type takes in YAML, those of an inlined
// struct included.
func yamlKeys(typ reflect.Type) []string {
	var keys []string
	for f := range typ.Fields() {
		k, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case strings.Contains(opts, "inline"):
			keys = append(keys, yamlKeys(f.Type)...)
		case k != "" && k != "-":
			keys = append(keys, k)
		}
	}
	return keys
}

var unknownField = regexp.MustCompile(`^field (\S+) not found in type (?:scenario\.)?(\w+)$`)

// unknownKey says yaml's "field requets not found in type
// scenario.Stream" as "a stream has no key "requets" (did you mean
// "requests"?); its keys are …", or "" when msg is another error.
func unknownKey(msg string) string {
	m := unknownField.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	part, ok := parts[m[2]]
	if !ok {
		return ""
	}
	keys := yamlKeys(part.typ)
	s := fmt.Sprintf("%s has no key %q", part.words, m[1])
	best, bestD := "", 3 // at most two edits away
	for _, k := range keys {
		if d := human.EditDistance(m[1], k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		s += fmt.Sprintf(" (did you mean %q?)", best)
	}
	slices.Sort(keys)
	return s + "; its keys are " + strings.Join(keys, ", ")
}

// maxScanLines bounds the profiles whose syntax errors are placed line
// by line (see faultLine).
const maxScanLines = 5000

// faultLine is the first line at which data stops parsing with the error
// msg (yaml names the line of the mapping around a bad indentation), or 0
// when no prefix of data fails with it.
func faultLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxScanLines {
		return 0
	}
	for k := 1; k <= len(lines); k++ {
		var v any
		err := yaml.Unmarshal(bytes.Join(lines[:k], nil), &v)
		if err == nil {
			continue
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil && m[2] == msg {
			return k
		}
	}
	return 0
}
