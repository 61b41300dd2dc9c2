package mcpwire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/google/go-cmp/cmp"
)

const (
	resp1   = `{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}`
	resp2   = `{"jsonrpc":"2.0","id":2,"result":{}}`
	errResp = `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}`
	note    = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`
	// A server request on the stream (older revisions allow them) with the
	// same id as the client's request: not the response.
	serverReq = `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`
)

func TestResponseJSON(t *testing.T) {
	sse := "text/event-stream"
	tests := []struct {
		name        string
		contentType string
		body        string
		id          string // "" for any response
		want        string
		wantErr     error
	}{
		{"application/json is the body", "application/json", resp1, "", resp1, nil},
		{"no content type is the body", "", `{"error":{"code":"not_found"}}`, "", `{"error":{"code":"not_found"}}`, nil},
		{"one event", sse, "data: " + resp1 + "\n\n", "", resp1, nil},
		{"the go-sdk's form", sse, "event: message\nid: abc_0\ndata: " + resp1 + "\n\n", "", resp1, nil},
		{"content type parameters and case", "Text/Event-Stream; charset=utf-8", "data: " + resp1 + "\n\n", "", resp1, nil},
		{"CRLF", sse, "event: message\r\ndata: " + resp1 + "\r\n\r\n", "", resp1, nil},
		{"CR", sse, "event: message\rdata: " + resp1 + "\r\r", "", resp1, nil},
		{"comments and keep-alives", sse, ":\r\n: ping\n\n:x\ndata: " + resp1 + "\n:between\n\n", "", resp1, nil},
		{"a notification first", sse, "data: " + note + "\n\ndata: " + resp1 + "\n\n", "", resp1, nil},
		{"a server request with the same id first", sse, "data: " + serverReq + "\n\ndata: " + resp1 + "\n\n", "1", resp1, nil},
		{"multi-line data", sse, "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\r\ndata: \"result\":{}}\n\n", "", "{\"jsonrpc\":\"2.0\",\n\"id\":1,\n\"result\":{}}", nil},
		{"no space after the colon", sse, "data:" + resp1 + "\n\n", "", resp1, nil},
		{"only one space is dropped", sse, "data:  " + resp1 + "\n\n", "", " " + resp1, nil},
		{"an event of another type is skipped", sse, "event: ping\ndata: " + resp2 + "\n\nevent: message\ndata: " + resp1 + "\n\n", "", resp1, nil},
		{"an empty data field", sse, "data\n\ndata: " + resp1 + "\n\n", "", resp1, nil},
		{"id and retry fields are ignored", sse, "id: 7\nretry: 1000\ndata: " + resp1 + "\n\n", "", resp1, nil},
		{"the response to the id asked", sse, "data: " + resp1 + "\n\ndata: " + resp2 + "\n\n", "2", resp2, nil},
		{"a string id", sse, `data: {"jsonrpc":"2.0","id":"a","result":{}}` + "\n\n", `"a"`, `{"jsonrpc":"2.0","id":"a","result":{}}`, nil},
		{"an error response", sse, "data: " + errResp + "\n\n", "1", errResp, nil},
		{"a byte-order mark", sse, "\xef\xbb\xbfdata: " + resp1 + "\n\n", "", resp1, nil},
		{"the last event without its blank line", sse, "data: " + note + "\n\ndata: " + resp1, "", resp1, nil},
		{"cut short inside the response", sse, "data: " + note + "\n\ndata: " + resp1[:30], "", "", mcpwire.ErrNoResponse},
		{"only notifications", sse, "data: " + note + "\n\n", "", "", mcpwire.ErrNoResponse},
		{"no response to that id", sse, "data: " + resp1 + "\n\n", "2", "", mcpwire.ErrNoResponse},
		{"empty", sse, "", "", "", mcpwire.ErrNoResponse},
		{"a stray line is not data", sse, "garbage " + resp1 + "\n\n", "", "", mcpwire.ErrNoResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var id json.RawMessage
			if tt.id != "" {
				id = json.RawMessage(tt.id)
			}
			got, err := mcpwire.ResponseJSON(tt.contentType, []byte(tt.body), id)
			if !errors.Is(err, tt.wantErr) || string(got) != tt.want {
				t.Errorf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			// The streaming reader sees the same response.
			if tt.id == "" && mcpwire.IsEventStream(tt.contentType) {
				raw, err := mcpwire.ReadAnswer(iotest.OneByteReader(strings.NewReader(tt.body)), tt.contentType, 1<<20)
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("ReadAnswer error %v, want %v", err, tt.wantErr)
				}
				if got, _ := mcpwire.ResponseJSON(tt.contentType, raw, nil); string(got) != tt.want {
					t.Errorf("ReadAnswer read %q, which holds %q", raw, got)
				}
			}
		})
	}
}

func TestDecodeResponse(t *testing.T) {
	r, err := mcpwire.DecodeResponse("text/event-stream", []byte("data: "+note+"\n\ndata: "+
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`+"\n\n"), json.RawMessage("4"))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := r.Error.Unsupported()
	if !ok || r.Result != nil || !cmp.Equal(d, mcpwire.UnsupportedVersion{Supported: []string{"2025-11-25"}, Requested: "2026-07-28"}) {
		t.Errorf("decoded %+v, data %+v %v", r, d, ok)
	}
	if r.Error.Error() != "JSON-RPC error -32022: unsupported" {
		t.Errorf("Error() = %q", r.Error.Error())
	}
	for _, body := range []string{`{"error":{"code":"not_found"}}`, `{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}`, `<html>`} {
		if _, err := mcpwire.DecodeResponse("application/json", []byte(body), nil); !errors.Is(err, mcpwire.ErrNotResponse) {
			t.Errorf("DecodeResponse(%s) error %v, want ErrNotResponse", body, err)
		}
	}
	if _, ok := (&mcpwire.Error{Code: -32602}).Unsupported(); ok {
		t.Error("a -32602 reads as unsupported version")
	}
}

// TestReadAnswerStopsAtTheResponse: a server may keep the stream open
// after the response; the reader must not wait for it to close.
func TestReadAnswerStopsAtTheResponse(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		io.WriteString(pw, ": hello\n\ndata: "+note+"\n\n")
		io.WriteString(pw, "event: message\ndata: "+resp1+"\n\n")
		// The stream stays open.
	}()
	body, err := mcpwire.ReadAnswer(pr, "text/event-stream", 1<<20)
	if err != nil || !bytes.Contains(body, []byte(resp1)) {
		t.Fatalf("ReadAnswer = %q, %v", body, err)
	}
}

func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		max            int
		wantErr        error
	}{
		{"json is read to the end", "application/json", resp1, 1 << 20, nil},
		{"a stream cut by the size cap", "text/event-stream", "data: " + resp1 + "\n\n", 20, mcpwire.ErrNoResponse},
		{"a stream that ends without a response", "text/event-stream", "data: " + note + "\n\n", 1 << 20, mcpwire.ErrNoResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := mcpwire.ReadAnswer(strings.NewReader(tc.body), tc.ct, tc.max)
			if !errors.Is(err, tc.wantErr) || string(body) != tc.body[:min(len(tc.body), tc.max)] {
				t.Errorf("ReadAnswer = %q, %v; want %v", body, err, tc.wantErr)
			}
		})
	}
	broken := io.MultiReader(strings.NewReader("data: "+note+"\n\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	if _, err := mcpwire.ReadAnswer(broken, "text/event-stream", 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a broken stream: %v, want the read error", err)
	}
}

func TestEvents(t *testing.T) {
	var got []mcpwire.Event
	for ev := range mcpwire.Events([]byte("event: a\ndata: 1\ndata: 2\n\nevent: b\n\ndata\n\nevent: message\ndata: x\n\n")) {
		got = append(got, mcpwire.Event{Type: ev.Type, Data: bytes.Clone(ev.Data)})
	}
	want := []mcpwire.Event{{Type: "a", Data: []byte("1\n2")}, {Data: []byte{}}, {Type: "message", Data: []byte("x")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// FuzzEvents holds the in-memory event parser and the streaming one (fed a
// byte at a time) to each other, and both to a round trip: data lines
// written as events come back joined by "\n".
func FuzzEvents(f *testing.F) {
	f.Add([]byte("event: message\nid: x\ndata: " + resp1 + "\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\rdata:c\r\n\r\n: comment\n"))
	f.Add([]byte("\xef\xbb\xbfdata: " + note + "\n\ndata: " + resp1))
	f.Add([]byte("data\n\nevent\n\r\n\r"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var mem []mcpwire.Event
		for ev := range mcpwire.Events(data) {
			mem = append(mem, mcpwire.Event{Type: ev.Type, Data: bytes.Clone(ev.Data)})
		}
		var stream []mcpwire.Event
		r := mcpwire.NewEventReader(iotest.OneByteReader(bytes.NewReader(data)), len(data)+16)
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("streaming reader: %v", err)
			}
			stream = append(stream, mcpwire.Event{Type: ev.Type, Data: bytes.Clone(ev.Data)})
		}
		if diff := cmp.Diff(mem, stream); diff != "" {
			t.Fatalf("in memory vs streaming (-mem +stream):\n%s", diff)
		}
		if got, err := mcpwire.ResponseJSON("text/event-stream", data, nil); err == nil && !json.Valid(got) {
			t.Fatalf("ResponseJSON returned %q, not JSON", got)
		}

		// Round trip: every line of data, sent as one event's data lines.
		lines := strings.FieldsFunc(string(data), func(r rune) bool { return r == '\r' || r == '\n' })
		if len(lines) == 0 {
			return
		}
		var sb strings.Builder
		for _, l := range lines {
			sb.WriteString("data: " + l + "\r\n")
		}
		sb.WriteString("\r\n")
		var n int
		for ev := range mcpwire.Events([]byte(sb.String())) {
			n++
			if string(ev.Data) != strings.Join(lines, "\n") || ev.Type != "" {
				t.Fatalf("round trip: %q, want %q", ev.Data, strings.Join(lines, "\n"))
			}
		}
		if n != 1 {
			t.Fatalf("round trip gave %d events, want 1", n)
		}
	})
}

// sseAnswer is the go-sdk's SSE answer to a tools/call: the result after
// a progress notification.
func sseAnswer(result string) []byte {
	return []byte("event: message\nid: s_0\ndata: " + note + "\n\nevent: message\nid: s_1\ndata: " +
		`{"jsonrpc":"2.0","id":1,"result":` + result + "}\n\n")
}

// BenchmarkResponseJSON reads the response out of SSE answers: a small
// tool result and a documentation page (60 KB).
func BenchmarkResponseJSON(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"small", sseAnswer(`{"content":[{"type":"text","text":"ok"}],"isError":false}`)},
		{"page-60KB", sseAnswer(`{"content":[{"type":"text","text":"` + strings.Repeat("rate limits ", 5000) + `"}]}`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if _, err := mcpwire.ResponseJSON("text/event-stream", bc.body, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadAnswer reads a small SSE answer from a stream, as the
// client does.
func BenchmarkReadAnswer(b *testing.B) {
	body := sseAnswer(`{"content":[{"type":"text","text":"ok"}],"isError":false}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := mcpwire.ReadAnswer(bytes.NewReader(body), "text/event-stream", 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
