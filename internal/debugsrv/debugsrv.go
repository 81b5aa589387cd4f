// Package debugsrv serves the Go runtime's profiles (net/http/pprof) on a
// listener of their own, bound to loopback, never on a service's public
// port: goroutine stacks and heap profiles describe the process's insides,
// and a CPU profile costs the service while it runs. A service starts one
// only when DEBUG_ADDR is set (config's loopback rule refuses any
// other host).
package debugsrv

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Handler serves /debug/pprof/ and its profiles.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// Start listens on addr and serves Handler until ctx is done or stop is
// called. It returns the address it listens on (addr may name port 0).
func Start(ctx context.Context, addr string, logger *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler:           Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		// No write timeout: a CPU profile or trace streams for as many
		// seconds as it was asked for.
		IdleTimeout: time.Minute,
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	logger.Info("profiling endpoints listening", "addr", ln.Addr().String())
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return ln.Addr().String(), func() { cancel(); <-done }, nil
}
