package refserver

import (
	"cmp"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// harness starts a Clients harness for n REST or MCP clients in front of a
// limited reference target whose budget is spent, and returns its URL and
// the arrivals it records.
func harness(t *testing.T, n int, surface string, barrier time.Duration) (string, *Clients, func() []Arrival) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Window = time.Minute
	limited, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	limited.Spend(surface, "127.0.0.1", map[string]int{"rest": 240, "mcp": 120}[surface])
	openCfg := DefaultConfig()
	openCfg.RESTLimit, openCfg.MCPLimit = 1<<30, 1<<30
	open, err := New(openCfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Arrival
	c := NewClients(ClientsConfig{N: n, Surface: surface, Barrier: barrier, Limited: limited, Open: open,
		Counted: func() { limited.Spend(surface, "127.0.0.1", 1) },
		Record: func(a Arrival) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, a)
		}})
	ts := httptest.NewServer(c)
	t.Cleanup(ts.Close)
	return ts.URL, c, func() []Arrival {
		mu.Lock()
		defer mu.Unlock()
		return append([]Arrival(nil), got...)
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	// A new connection each time: net/http silently resends a GET reset on a
	// reused one, which would be a second attempt the test did not make.
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestClientsScenario: first requests wait until all clients arrived and
// are refused together; a retry of the first request meets the spent
// budget; a new request is answered by the script (a failure-table
// answer, then a 503 and a reset that pass on retry); every arrival is
// recorded with its client, request and attempt taken from fingerprints.
func TestClientsScenario(t *testing.T) {
	url, c, arrivals := harness(t, 3, "rest", 10*time.Second)
	q := "/api/public/search?q=rate+limits"
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := 1; i <= 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = getStatus(t, url+"/c/"+string(rune('0'+i))+q)
		}()
		if i < 3 {
			// Client i has arrived before the clock of its 50 ms starts, so
			// the barrier waits at least 100 ms however late goroutines run.
			for c.Barrier().Arrived < i {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // the barrier holds the early ones
			if b := c.Barrier(); b.Opened {
				t.Fatalf("barrier opened with %d of 3 clients", b.Arrived)
			}
		}
	}
	wg.Wait()
	if codes[1] != 429 || codes[2] != 429 || codes[3] != 429 {
		t.Fatalf("first requests: %v, want 429 for all", codes[1:])
	}
	if b := c.Barrier(); !b.Opened || b.TimedOut || b.Arrived != 3 || b.Waited < 100*time.Millisecond {
		t.Errorf("barrier %+v, want opened by the third client after about 100ms", b)
	}
	steps := []struct {
		path   string
		status int
		answer string
	}{
		{q, 429, "limiter"},                                    // retry of request 1: the budget is spent
		{"/api/public/search?q=other", 422, "answer"},          // request 2: a failure-table answer
		{"/api/public/search?q=other", 422, "answer"},          // …retried (the judge fails this)
		{"/api/public/pages/errors-and-retries", 503, "fault"}, // request 3: a fault
		{"/api/public/pages/errors-and-retries", 200, "pass"},  // …retried: passes
		{"/api/public/search?q=third", 0, "fault"},             // request 4: a reset
		{"/api/public/search?q=third", 200, "pass"},
		{"/api/public/search?q=fourth", 200, "pass"}, // request 5: passes
	}
	for _, s := range steps {
		if got := getStatus(t, url+"/c/1"+s.path); got != s.status {
			t.Errorf("%s: status %d, want %d", s.path, got, s.status)
		}
	}
	want := [][2]int{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {3, 1}, {3, 2}, {4, 1}, {4, 2}, {5, 1}}
	// Every arrival is on record before its answer reaches the client
	// (a reset too), so all of them are here now.
	var mine []Arrival
	for _, a := range arrivals() {
		if a.Client == 1 {
			mine = append(mine, a)
		}
	}
	slices.SortFunc(mine, func(a, b Arrival) int { return cmp.Compare(a.At, b.At) })
	if len(mine) != len(want) {
		t.Fatalf("%d arrivals of client 1, want %d: %+v", len(mine), len(want), mine)
	}
	for i, a := range mine {
		if [2]int{a.Request, a.Attempt} != want[i] || a.Done < a.At {
			t.Errorf("arrival %d: request %d attempt %d (at %v, done %v), want %v", i, a.Request, a.Attempt, a.At, a.Done, want[i])
		}
		if i > 0 && a.Answer != steps[i-1].answer {
			t.Errorf("arrival %d: answer %q, want %q", i, a.Answer, steps[i-1].answer)
		}
	}
	if mine[0].Answer != "barrier" || mine[0].Path != "/api/public/search" {
		t.Errorf("first arrival %+v", mine[0])
	}
}

// TestClientsBarrierTimeout: a client that never comes does not hold the
// others for ever: past the barrier's bound they are released and the
// barrier says it timed out.
func TestClientsBarrierTimeout(t *testing.T) {
	url, c, _ := harness(t, 2, "rest", 200*time.Millisecond)
	if got := getStatus(t, url+"/c/1/api/public/search?q=rate"); got != 429 {
		t.Errorf("status %d, want 429", got)
	}
	if b := c.Barrier(); !b.Opened || !b.TimedOut || b.Arrived != 1 {
		t.Errorf("barrier %+v, want opened on its timeout with 1 arrived", b)
	}
	if got := getStatus(t, url+"/c/9/api/public/search?q=rate"); got != 404 {
		t.Errorf("client 9 of 2: status %d, want 404", got)
	}
}

// TestClientsMCP: an MCP client's retry is the same request again even
// when it renews the JSON-RPC id, and the scripted answers are JSON-RPC
// errors and tool errors carrying the request's id.
func TestClientsMCP(t *testing.T) {
	url, _, arrivals := harness(t, 1, "mcp", time.Second)
	call := func(id int, query string) (int, string) {
		body := `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"name":"search","arguments":{"query":"` + query + `"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, url+"/c/1/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "search")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call(1, "rate"); code != 429 {
		t.Fatalf("first call: %d, want 429", code)
	}
	if code, body := call(2, "rate"); code != 429 || !strings.Contains(body, "-32603") {
		t.Errorf("retry with a new id: %d %s, want 429 -32603", code, body)
	}
	if code, body := call(3, "other"); code != 200 || !strings.Contains(body, `"id":3`) || !strings.Contains(body, "-32602") {
		t.Errorf("request 2: %d %s, want a -32602 answer to id 3", code, body)
	}
	a := arrivals()
	if len(a) != 3 || a[1].Request != 1 || a[1].Attempt != 2 || a[2].Request != 2 {
		t.Errorf("arrivals %+v", a)
	}
}

// TestClientsPoller: a client that sends the same request every time (it
// polls one URL) makes a new request after each success; it gets its
// failure-table answer on its last request only, so that a repeat after
// it is a retry of the answer.
func TestClientsPoller(t *testing.T) {
	openCfg := DefaultConfig()
	openCfg.RESTLimit, openCfg.MCPLimit = 1<<30, 1<<30
	open, err := New(openCfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Arrival
	c := NewClients(ClientsConfig{N: 1, Requests: 5, Surface: "rest", Barrier: time.Second, Limited: open, Open: open,
		Record: func(a Arrival) { mu.Lock(); got = append(got, a); mu.Unlock() }})
	ts := httptest.NewServer(c)
	defer ts.Close()
	steps := []struct {
		status           int
		request, attempt int
		answer           string
	}{
		{429, 1, 1, "barrier"}, {200, 1, 2, "limiter"}, // the retry is admitted: a success
		{200, 2, 1, "pass"},                       // the same again after a success: request 2 (its answer comes last)
		{503, 3, 1, "fault"}, {200, 3, 2, "pass"}, // a fault, retried
		{0, 4, 1, "fault"}, {200, 4, 2, "pass"}, // a reset, retried
		{422, 5, 1, "answer"}, {422, 5, 2, "answer"}, // the last request's answer, retried: a retry
	}
	for i, s := range steps {
		if code := getStatus(t, ts.URL+"/c/1/api/public/search?q=rate+limits"); code != s.status {
			t.Fatalf("step %d: status %d, want %d", i, code, s.status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(steps) {
		t.Fatalf("%d arrivals, want %d: %+v", len(got), len(steps), got)
	}
	for i, s := range steps {
		if a := got[i]; a.Request != s.request || a.Attempt != s.attempt || a.Answer != s.answer || a.Repeat {
			t.Errorf("arrival %d: request %d attempt %d answer %s repeat %v, want %d %d %s", i, a.Request, a.Attempt, a.Answer, a.Repeat, s.request, s.attempt, s.answer)
		}
	}
}
