// Command fakeserver serves the benchmark's fake OpenAI-compatible model
// (see package fake) on loopback and prints its base URL on the first line
// of standard output, e.g. "http://127.0.0.1:41234/v1". Besides
// POST /v1/chat/completions it answers POST /v1/hold and /v1/release (hold
// every session's first request until released, so a contender can be
// measured while all its sessions wait on the model) and GET /v1/stats.
// It runs until it is
// interrupted or its standard input closes, then prints how many requests
// it served and refused on standard error.
//
//	go run ./bench/compare/fakeserver -addr 127.0.0.1:0 -latency 0
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/bench/compare/fake"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	latency := flag.Duration("latency", 0, "fixed latency added to every reply")
	watchStdin := flag.Bool("stdin", false, "exit when standard input closes (for a parent process)")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !net.ParseIP(host).IsLoopback() && host != "localhost" {
		log.Fatalf("fakeserver: -addr %q: listen on a loopback address such as 127.0.0.1:0", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("fakeserver: %v", err)
	}
	srv := fake.New(*latency)
	var logged atomic.Int32
	srv.OnReject = func(reason string) {
		if logged.Add(1) <= 5 {
			log.Printf("fakeserver: rejected a request: %s", reason)
		}
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
	fmt.Printf("http://%s/v1\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *watchStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatalf("fakeserver: %v", err)
	}
	fmt.Fprintf(os.Stderr, "fakeserver: %d requests, %d rejected\n", srv.Requests(), srv.Rejected())
}
