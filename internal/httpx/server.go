package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ShutdownGrace bounds how long a stopping server waits for in-flight
// requests to finish.
const ShutdownGrace = 20 * time.Second

// NewServer returns an http.Server with the platform's timeouts: slow
// headers are cut after 5 s, idle keep-alive connections after 2 minutes.
// It reads header blocks well past MaxHeaderBytes so that the handler
// (Finish), not net/http's text/plain page, refuses them in the service's
// envelope.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    serverHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Serve serves h on ln until ctx is done, then stops accepting connections
// and lets in-flight requests finish (up to ShutdownGrace). Requests are not
// cancelled by ctx: a signal drains them instead of aborting them.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	return ServeWith(ctx, ln, NewServer(h, logger), logger)
}

// ServeWith is Serve with a server the caller adjusted from NewServer's,
// such as the gateway's larger header limit.
func ServeWith(ctx context.Context, ln net.Listener, srv *http.Server, logger *slog.Logger) error {
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "addr", ln.Addr().String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return err
}
