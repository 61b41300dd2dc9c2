package capacity

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaFile documents Result for the users of capacity --json.
const schemaFile = "../docs/schema/capacity.json"

// TestResultMatchesSchema: the results of real searches, of every
// ending, are valid against docs/schema/capacity.json, and every field
// the schema requires is one Result writes.
func TestResultMatchesSchema(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	schema, err := c.Compile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	fast := func(float64, int) (time.Duration, time.Duration, bool, bool) {
		return 0, 10 * time.Millisecond, false, false
	}
	for _, tc := range []struct {
		name    string
		o       Options
		api     fakeAPI
		wantUSL bool
	}{
		{"found", Options{StartRate: 100, MaxRate: 10000, Resamples: 200}, &ddc{c: 50, service: 20 * time.Millisecond}, true},
		{"max rate", Options{StartRate: 100, MaxRate: 1000}, &byRate{f: fast}, true},
		{"not found", Options{StartRate: 100, MaxRate: 1000}, &byRate{f: func(float64, int) (time.Duration, time.Duration, bool, bool) {
			return 0, time.Second, false, false
		}}, false},
		{"limits", Options{StartRate: 100, MaxRate: 1000, Limit: 240, Window: time.Minute}, &byRate{f: func(rate float64, i int) (time.Duration, time.Duration, bool, bool) {
			refused := rate > 300 && i%1000 == 999 // past the warm-up
			return 0, time.Millisecond, refused, refused
		}}, false},
		{"undecided", Options{StartRate: 10, MaxRate: 10}, &byRate{f: fast}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.o.Objective = p99(t, "100ms")
			res, _, _ := drive(t, tc.o, tc.api)
			if (res.USL != nil) != tc.wantUSL {
				t.Errorf("usl %+v, want it present: %v", res.USL, tc.wantUSL)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Errorf("%s does not match %s: %v\n%s", tc.name, schemaFile, err, b)
			}
		})
	}
}

// TestSchemaNamesEveryField: the schema's properties are exactly the JSON
// fields of Result, StepResult and USL, so that neither drifts.
func TestSchemaNamesEveryField(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]any `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	one := 1.0
	for _, tc := range []struct {
		name  string
		props map[string]any
		value any
	}{
		{"result", s.Properties, Result{}},
		{"step", s.Defs["step"].Properties, StepResult{Phase: phaseRamp, HostDelayMS: 1}},
		{"usl", s.Defs["usl"].Properties, USL{PeakConcurrency: &one}},
	} {
		b, _ := json.Marshal(tc.value)
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		for k := range fields {
			if _, ok := tc.props[k]; !ok {
				t.Errorf("%s: field %q is not in the schema", tc.name, k)
			}
		}
		for k := range tc.props {
			if _, ok := fields[k]; !ok {
				t.Errorf("%s: the schema's %q is no field", tc.name, k)
			}
		}
	}
}
