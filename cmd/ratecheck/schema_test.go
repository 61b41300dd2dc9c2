package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// schemaDir holds the JSON Schemas of every --json output, the users'
// documentation of those outputs.
const schemaDir = "../../docs/schema"

// schemas compiles each schema once; the end-to-end tests validate every
// --json output they run against its schema.
var schemas sync.Map // file name → *jsonschema.Schema

// compiledSchema returns the compiled schema docs/schema/name.
func compiledSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	if s, ok := schemas.Load(name); ok {
		return s.(*jsonschema.Schema)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	s, err := c.Compile(filepath.Join(schemaDir, name))
	if err != nil {
		t.Fatalf("docs/schema/%s: %v", name, err)
	}
	schemas.Store(name, s)
	return s
}

// matchSchema fails t unless out, a command's stdout, is one JSON document
// valid against docs/schema/name.
func matchSchema(t *testing.T, name, out string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Errorf("stdout is not one JSON document: %v\n%s", err, out)
		return
	}
	if err := compiledSchema(t, name).Validate(doc); err != nil {
		t.Errorf("stdout does not match docs/schema/%s: %#v\n%s", name, err, out)
	}
}

// TestSchemasDescribeEveryField: every schema compiles as draft 2020-12,
// every property and definition has a description, and every object
// closes its properties, so that a schema documents all of its output.
func TestSchemasDescribeEveryField(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema in %s: %v", schemaDir, err)
	}
	var names []string
	for _, f := range files {
		name := filepath.Base(f)
		names = append(names, name)
		t.Run(name, func(t *testing.T) {
			compiledSchema(t, name)
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var root map[string]any
			if err := json.Unmarshal(b, &root); err != nil {
				t.Fatal(err)
			}
			if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("$schema %v, want draft 2020-12", root["$schema"])
			}
			for _, p := range undocumented(root, "#") {
				t.Errorf("%s", p)
			}
		})
	}
	want := []string{"capacity.json", "compare.json", "contract.json", "fleet.json", "history.json", "verdict.json"}
	sort.Strings(names)
	if !slices.Equal(names, want) {
		t.Errorf("schemas %v, want %v (one per --json output, and the contract file's)", names, want)
	}
}

// undocumented lists what a schema leaves undescribed: a property or a
// definition without a description, an object without
// additionalProperties false.
func undocumented(s map[string]any, at string) []string {
	var out []string
	if _, ok := s["description"].(string); !ok {
		out = append(out, at+": no description")
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if s["additionalProperties"] != false {
			out = append(out, at+": properties without additionalProperties false")
		}
		for k, v := range props {
			out = append(out, undocumented(v.(map[string]any), at+"/properties/"+k)...)
		}
	}
	if defs, ok := s["$defs"].(map[string]any); ok {
		for k, v := range defs {
			out = append(out, undocumented(v.(map[string]any), at+"/$defs/"+k)...)
		}
	}
	return out
}

// TestSchemaVerdictsIncludeInconclusive: a check that could not gather its
// evidence is inconclusive, and so is a run with such a check and no
// failure (exit 4); the schemas admit both.
func TestSchemaVerdictsIncludeInconclusive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, pointer string }{
		{"verdict.json", "/$defs/runVerdict/enum"},
		{"verdict.json", "/$defs/check/properties/verdict/enum"},
		{"fleet.json", "/properties/verdict/enum"},
		{"fleet.json", "/$defs/check/properties/verdict/enum"},
	} {
		b, err := os.ReadFile(filepath.Join(schemaDir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		for _, k := range strings.Split(tc.pointer, "/")[1:] {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		enum, _ := v.([]any)
		if !slices.Contains(enum, any("inconclusive")) {
			t.Errorf("%s#%s = %v, want it to include inconclusive", tc.file, tc.pointer, v)
		}
	}
}

// TestAnalyzeJSONWithoutSurfaces: input with no REST or MCP request is
// not judged: exit 2, naming what it holds instead.
func TestAnalyzeJSONWithoutSurfaces(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "other.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := vegeta.NewEncoder(f)
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		r := vegeta.Result{Method: "GET", URL: "http://127.0.0.1:8080/healthz", Code: 200,
			Timestamp: start.Add(time.Duration(i) * time.Second), Latency: time.Millisecond}
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "analyze", "--json", path)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "no request to /api/public/ or /mcp: results of another API (the first is 200 from /healthz)") {
		t.Errorf("exit %d, want %d naming what was found\n%s%s", code, exitUsage, stdout, stderr)
	}
}
