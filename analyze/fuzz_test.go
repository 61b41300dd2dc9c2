package analyze

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/method"
)

// FuzzAnalyzeFile: whatever a results file holds, what is read of it is
// analyzed without a panic, from memory and from disk alike, as the batch
// analyzer did. (archive's FuzzRead covers the reading alone.)
func FuzzAnalyzeFile(f *testing.F) {
	rs := fuzzResults(3) // small seeds: minimizing a new input reads it thousands of times
	for _, enc := range []func(*bytes.Buffer) vegeta.Encoder{
		func(b *bytes.Buffer) vegeta.Encoder { return vegeta.NewEncoder(b) },
		func(b *bytes.Buffer) vegeta.Encoder { return vegeta.NewJSONEncoder(b) },
		func(b *bytes.Buffer) vegeta.Encoder { return vegeta.NewCSVEncoder(b) },
	} {
		var buf bytes.Buffer
		e := enc(&buf)
		for i := range rs {
			if err := e.Encode(&rs[i]); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(buf.Bytes())
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "results.bin")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := Read([]string{path})
		if err != nil {
			return
		}
		cfg := Config{Window: time.Second}
		rep, err := Analyze(in, cfg)
		if err != nil {
			var foreign *foreignError
			if !errors.As(err, &foreign) {
				t.Fatal(err)
			}
			return
		}
		got := comparable(rep)
		lo, hi := in.Records[0].Start, in.Records[0].Start
		for _, r := range in.Records {
			lo, hi = min(lo, r.Start, r.End), max(hi, r.Start, r.End)
		}
		// The batch analyzer binned the whole span in memory: compare on
		// inputs it can take.
		if hi-lo > 0 && hi-lo < 1000*int64(cfg.Window) {
			if want := comparable(refAnalyze(in, cfg)); got != want {
				t.Fatalf("streaming analysis differs from the batch one:\n%s\nbatch:\n%s", got, want)
			}
		}
		sp, err := Open([]string{path})
		if err != nil {
			t.Fatalf("Read took it, Open refused it: %v", err)
		}
		defer sp.Close()
		fromDisk, err := AnalyzeSource(sp, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := comparable(fromDisk); d != got {
			t.Fatalf("analysis from disk differs from memory:\n%s\nmemory:\n%s", d, got)
		}
	})
}

// FuzzErrorCode: wherever the fast reading of a body's error.code answers,
// it answers what json.Unmarshal reads.
func FuzzErrorCode(f *testing.F) {
	for _, s := range []string{`{"error":{"code":"rate_limited"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"rate limited"}}`,
		`{"error":{"code":"rate_limited","request_id":"req-1"}}`, `{"Error":{"code":"x"}}`, `{"error":{"CODE":1}}`, `{"error":null}`,
		`{"error":{"code":"a\"b"}}`, `{"error":{"code":1e3}}`, `{"error":{"code":[1]},"error":{"code":"late"}}`, `[]`, `"x"`, `{`, ` {"error" : { "code" : 7 } } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rest, rpc, ok := fastErrorCode(b)
		if !ok {
			return
		}
		wantRest, wantRPC, _ := errorCodes(b)
		if rest != wantRest || rpc != wantRPC {
			t.Fatalf("%q: fast %q %d, json %q %d", b, rest, rpc, wantRest, wantRPC)
		}
	})
}

// fuzzResults returns n results of both surfaces, some refused, some
// without labels, some with faults.
func fuzzResults(n int) []vegeta.Result {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	out := make([]vegeta.Result, n)
	for i := range out {
		r := vegeta.Result{Attack: archive.Labels{Surface: []string{method.REST, method.MCP}[i%2], Source: "127.0.0.1", Stream: method.StreamFlood}.String(), Code: 200,
			Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Duration(300+i%7) * time.Microsecond,
			Method: "GET", URL: "http://127.0.0.1:8080/api/public/search?q=x"}
		switch i % 3 {
		case 1:
			r.Code, r.Body = 429, []byte(`{"error":{"code":"rate_limited"}}`)
		case 2:
			r.Attack, r.Code, r.Error = "", 0, "read: connection reset by peer"
		}
		out[i] = r
	}
	return out
}
