package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
)

func main() {
	n := flag.Int("n", 1000000, "number of results")
	out := flag.String("o", "results.bin", "output file")
	spread := flag.Duration("spread", 0, "latencies spread from 300µs up to 300µs+`D`, and results written as they would complete, out of send order (as Vegeta writes them)")
	vary := flag.Bool("vary", false, "make every result differ as a real target's do: a request id in each 429 body, a RateLimit header counting down, no ratecheck labels and an id in each URL (as the Vegeta CLI records them)")
	flag.Parse()
	rng := rand.New(rand.NewPCG(1, 1))
	var pending []vegeta.Result // with -spread: every result, to write in completion order
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := vegeta.NewEncoder(w)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	const window = time.Minute
	logs := map[string][]time.Time{}
	for i := range *n {
		surface, url, limit := "rest", "http://127.0.0.1:8080/api/public/search?q=rate", 240
		if i%3 == 2 {
			surface, url, limit = "mcp", "http://127.0.0.1:8080/mcp", 120
		}
		src := fmt.Sprintf("127.0.0.%d", 1+i%5)
		ts := t0.Add(time.Duration(i) * time.Millisecond)
		key := surface + src
		var kept []time.Time
		for _, t := range logs[key] {
			if ts.Sub(t) < window {
				kept = append(kept, t)
			}
		}
		code, body := uint16(200), []byte(`{"results":[]}`)
		switch {
		case len(kept) >= limit && surface == "mcp":
			code, body = 429, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"rate limited"}}`)
		case len(kept) >= limit:
			code, body = 429, []byte(`{"error":{"code":"rate_limited"}}`)
		case surface == "mcp":
			body = []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		}
		if len(kept) >= limit {
			kept = kept[len(kept)-limit+1:]
		}
		logs[key] = append(kept, ts)
		r := vegeta.Result{Attack: archive.Labels{Surface: surface, Source: src, Stream: "flood"}.String(), Seq: uint64(i), Code: code,
			Timestamp: ts, Latency: 300 * time.Microsecond, Method: "GET", URL: url, Body: body, BytesIn: uint64(len(body))}
		if *vary {
			r.Attack, r.URL = "", fmt.Sprintf("%s&id=%d", url, i)
			if surface == "mcp" {
				r.URL = fmt.Sprintf("%s?id=%d", url, i)
			}
			r.Headers = map[string][]string{"Ratelimit": {fmt.Sprintf("limit=%d, remaining=%d, reset=%d", limit, max(limit-len(kept)-1, 0), i%60000)}}
			if code == 429 {
				r.Body = fmt.Appendf(nil, `{"error":{"code":"rate_limited","request_id":"req-%d"}}`, i)
			}
		}
		if *spread > 0 {
			r.Latency += time.Duration(rng.Int64N(int64(*spread)))
			pending = append(pending, r)
			continue
		}
		if err := enc.Encode(&r); err != nil {
			log.Fatal(err)
		}
	}
	slices.SortStableFunc(pending, func(a, b vegeta.Result) int { return a.End().Compare(b.End()) })
	for i := range pending {
		if err := enc.Encode(&pending[i]); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
