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
