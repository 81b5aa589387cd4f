package sqltest

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy stands between a pool and a PostgreSQL server, to play its
// outages: while Down it drops every connection it accepts, while Frozen
// it holds the bytes it reads (a server that accepts and never answers),
// otherwise it forwards them. With no target it never answers at all.
type Proxy struct {
	Down   atomic.Bool
	Frozen atomic.Bool

	ln     net.Listener
	target string
	stop   chan struct{}
	wg     sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port, or "" for a server that
// never answers); it stops when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, stop: make(chan struct{})}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() {
		close(p.stop)
		ln.Close()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is dbURL with its host replaced by the proxy's.
func (p *Proxy) URL(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	return u.String()
}

// Target is the host:port of the server behind a PostgreSQL URL.
func Target(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func (p *Proxy) serve(c net.Conn) {
	defer c.Close()
	if p.target == "" {
		<-p.stop
		return
	}
	if p.Down.Load() {
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		<-p.stop
		c.Close()
		up.Close()
	}()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				break
			}
			if p.Frozen.Load() {
				<-p.stop
				break
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
}
