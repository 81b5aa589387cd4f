// Package embeddednats runs a NATS server with JetStream inside the process,
// for `platform dev` and for tests: the real broker, on loopback, with its
// store in a directory the caller owns.
package embeddednats

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a running embedded server.
type Server struct {
	srv  *server.Server
	url  string
	port int
	dir  string
	once sync.Once
}

// Options configure StartServer.
type Options struct {
	// Dir holds the JetStream store (under Dir/nats). Required.
	Dir string
	// Port is the loopback port to listen on; 0 picks a free one.
	Port int
}

// Start starts a server with JetStream on a random loopback port, its store
// under dir, and returns its URL and a shutdown function (safe to call more
// than once). ctx bounds the start only: the server runs until shutdown, so
// the caller can stop the services that publish before the broker.
func Start(ctx context.Context, dir string) (url string, shutdown func(), err error) {
	s, err := StartServer(ctx, Options{Dir: dir})
	if err != nil {
		return "", nil, err
	}
	return s.URL(), s.Shutdown, nil
}

// StartServer starts a server as Options say. Starting again with the same
// Dir and Port after a Shutdown gives the same broker back, stream and all,
// which is how tests take the broker down and bring it back.
func StartServer(ctx context.Context, o Options) (*Server, error) {
	if o.Dir == "" {
		return nil, errors.New("embeddednats: a store directory is required")
	}
	port := o.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName:         "platform-embedded",
		Host:               "127.0.0.1",
		Port:               port,
		JetStream:          true,
		StoreDir:           filepath.Join(o.Dir, "nats"),
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  1 << 30,
		NoLog:              true,
		NoSigs:             true, // the process's signals belong to the process
		MaxPayload:         1 << 20,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embeddednats: %w", err)
	}
	go srv.Start()

	wait := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		return nil, errors.New("embeddednats: server not ready for connections")
	}
	addr, ok := srv.Addr().(*net.TCPAddr)
	if !ok {
		srv.Shutdown()
		return nil, errors.New("embeddednats: server has no TCP address")
	}
	return &Server{
		srv:  srv,
		url:  fmt.Sprintf("nats://127.0.0.1:%d", addr.Port),
		port: addr.Port,
		dir:  o.Dir,
	}, nil
}

// URL is the server's client URL.
func (s *Server) URL() string { return s.url }

// Port is the loopback port the server listens on.
func (s *Server) Port() int { return s.port }

// Dir is the store directory given at start.
func (s *Server) Dir() string { return s.dir }

// Shutdown stops the server and waits until it has stopped.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	})
}
