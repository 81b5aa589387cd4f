// Package embedregistry runs a CNCF Distribution registry inside the
// process, with filesystem storage under one directory and no auth: the
// upstream of `platform dev` and of keyholder's tests. Production points
// KEYHOLDER_REGISTRY_URL at the company's own registry instead.
package embedregistry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"

	// The filesystem driver registers itself with Distribution's driver
	// factory; it is the only storage the embedded registry uses.
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	"github.com/sirupsen/logrus"
)

// Registry is a running embedded registry.
type Registry struct {
	// URL is the registry's base address, http://host:port.
	URL  string
	srv  *http.Server
	app  *handlers.App
	err  chan error
	once sync.Once
	stop error
}

// Start serves a registry on ln, storing under dir, until Stop. Distribution
// logs through logrus's standard logger (it offers no other hook); Start
// sends those lines to logger at debug level, since Distribution reports
// every 404 a client probes for as an error.
func Start(ctx context.Context, ln net.Listener, dir string, logger *slog.Logger) (*Registry, error) {
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"filesystem": configuration.Parameters{"rootdirectory": dir},
			"delete":     configuration.Parameters{"enabled": false},
		},
	}
	cfg.HTTP.Secret = "embedded-registry-uploads-are-local"
	logrus.SetFormatter(&logrus.TextFormatter{DisableColors: true, DisableTimestamp: true})
	logrus.SetOutput(debugWriter{logger})
	var app *handlers.App
	if err := func() (err error) {
		// NewApp panics on a storage it cannot create.
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("embedded registry: %v", p)
			}
		}()
		app = handlers.NewApp(ctx, cfg)
		return nil
	}(); err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{
		Handler:           withHealthz(app),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	r := &Registry{URL: "http://" + ln.Addr().String(), srv: srv, app: app, err: make(chan error, 1)}
	go func() { r.err <- srv.Serve(ln) }()
	logger.Info("embedded registry listening", "addr", ln.Addr().String(), "storage", dir)
	return r, nil
}

// Stop closes the listener and every connection, then the registry's
// background work.
// Stopping twice is a no-op.
func (r *Registry) Stop() error {
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := r.srv.Shutdown(ctx)
		if serr := <-r.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		_ = r.app.Shutdown()
		r.stop = err
	})
	return r.stop
}

// withHealthz answers GET /healthz with 200 beside the registry, which
// serves only /v2/: a supervisor (the bench harness, a process manager)
// probes the registry as it probes every service.
func withHealthz(app http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
			return
		}
		app.ServeHTTP(w, r)
	})
}

// debugWriter writes each logrus line to a slog logger at debug level.
type debugWriter struct{ logger *slog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.logger.Debug("distribution", "line", strings.TrimSpace(string(p)))
	return len(p), nil
}
