// The Go floor of `node bench/webhook-floor.ts --conditions=...,floor-go`: the same bare webhook as
// webhook-floor-server.ts (read the AdmissionReview, echo its uid, allow) in Go's net/http, the stack kcp's own
// webhook client is written in. Beside the Node floor it tells kcp's share of a webhook call from the server's.
// Go's server offers HTTP/2 (ALPN), which kcp's client takes for a loopback URL only (k8s.io/apiserver's webhook client
// forces HTTP/1.1 for any other host); with "h1" it offers HTTP/1.1 only, as node:https, and as a deployed webhook sees.
// Standard library only. Usage: floor-go <dir with tls.crt and tls.key> [h1]; prints {"port":N} on stdout, then
// answers each line on stdin with {"user":µs,"system":µs,"reviews":N,"http2":N,"connections":N}; exits when stdin
// closes.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

type review struct {
	Request struct {
		UID string `json:"uid"`
	} `json:"request"`
}

func main() {
	dir := os.Args[1]
	var reviews, http2, connections atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in review
		_ = json.Unmarshal(body, &in)
		reviews.Add(1)
		if r.ProtoMajor == 2 {
			http2.Add(1)
		}
		out, _ := json.Marshal(map[string]any{
			"apiVersion": "admission.k8s.io/v1",
			"kind":       "AdmissionReview",
			"response":   map[string]any{"uid": in.Request.UID, "allowed": true},
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	server := &http.Server{Handler: handler, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			connections.Add(1)
		}
	}}
	if len(os.Args) > 2 && os.Args[2] == "h1" {
		// A non-nil empty map turns HTTP/2 off (net/http's documented switch).
		server.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	go func() {
		_ = server.ServeTLS(ln, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	}()
	fmt.Printf("{\"port\":%d}\n", ln.Addr().(*net.TCPAddr).Port)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Printf("{\"user\":%d,\"system\":%d,\"reviews\":%d,\"http2\":%d,\"connections\":%d}\n",
			ru.Utime.Sec*1e6+int64(ru.Utime.Usec), ru.Stime.Sec*1e6+int64(ru.Stime.Usec), reviews.Load(), http2.Load(),
			connections.Load())
	}
}
