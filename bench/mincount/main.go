// Command mincount is the baseline of bench/serve-flood.sh: a minimal HTTP
// handler that only counts requests per client address under a mutex. The
// reference target must answer at least 90 % of its rate under the same load.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "host:port to listen on")
	flag.Parse()
	var mu sync.Mutex
	counts := map[string]int{}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("mincount: listening on http://" + ln.Addr().String())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		counts[host]++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})))
}
