// Command go is an example client program for ratecheck fleet --client-cmd,
// built on package client: it retries only 429s and transport faults,
// with full jitter, at most 4 attempts, and slows down after repeated
// 429s. It passes.
//
//	go run ./cmd/ratecheck fleet --client-cmd 'go run ./examples/clients/go' --clients 50
//
// It reads what the fleet tells it from its environment: RATECHECK_BASE_URL,
// RATECHECK_SURFACE (rest or mcp) and RATECHECK_REQUESTS. -attempts sets
// its attempts per request; -poll makes every logical request the same
// (one URL polled, as many SDKs do): the fleet then tells a new request
// from a retry by what the harness answered before it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/connectbyjbrh/ratecheck/client"
)

func main() {
	attempts := flag.Int("attempts", 4, "attempts per logical request")
	poll := flag.Bool("poll", false, "send the same request every time (poll one URL)")
	flag.Parse()
	base, surface := os.Getenv("RATECHECK_BASE_URL"), os.Getenv("RATECHECK_SURFACE")
	n, err := strconv.Atoi(os.Getenv("RATECHECK_REQUESTS"))
	if base == "" || err != nil {
		fmt.Fprintln(os.Stderr, "run me under ratecheck fleet --client-cmd: RATECHECK_BASE_URL and RATECHECK_REQUESTS are not set")
		os.Exit(2)
	}
	c := &client.Client{
		BaseURL:  base,
		Backoff:  client.Backoff{Strategy: client.Full, Base: 500 * time.Millisecond, Cap: 8 * time.Second},
		Attempts: *attempts,
		Governor: &client.Governor{Min: time.Second, Max: 8 * time.Second},
	}
	ctx := context.Background()
	for i := 1; i <= n; i++ {
		// Every logical request differs (the query): the fleet tells a
		// retry from a new request by what was sent.
		q := fmt.Sprintf("rate limits %d", i)
		if *poll {
			q = "rate limits"
		}
		var err error
		if surface == "mcp" {
			_, err = c.Call(ctx, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": q}})
		} else {
			_, err = c.Get(ctx, "/api/public/search", url.Values{"q": {q}})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "request %d: %v\n", i, err)
		}
	}
}
