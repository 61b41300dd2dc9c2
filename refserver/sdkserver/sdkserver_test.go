package sdkserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/refserver/sdkserver"
)

func TestHandler(t *testing.T) {
	if _, err := sdkserver.Handler(sdkserver.Config{Mode: "x"}); err == nil || !strings.Contains(err.Error(), `unknown mode "x"`) {
		t.Errorf("an unknown mode: %v", err)
	}
	for _, mode := range sdkserver.Modes {
		h, err := sdkserver.Handler(sdkserver.Config{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(h)
		// Only /mcp is served; a GET there is the SDK's to answer: 405
		// when stateless, 400 without a session when stateful
		// (mcp/streamable.go serveStateless, serveStatefulGET).
		get := 405
		if mode == sdkserver.Stateful20251125 {
			get = 400
		}
		for path, want := range map[string]int{"/": 404, "/api/public/search": 404, "/mcp": get} {
			resp, err := http.Get(ts.URL + path)
			if err != nil || resp.StatusCode != want {
				t.Errorf("%s GET %s: %v %v, want %d", mode, path, err, resp, want)
			}
		}
		ts.Close()
	}
}
