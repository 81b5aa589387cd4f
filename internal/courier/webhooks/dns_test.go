package webhooks_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer is a real DNS server on a loopback UDP port that answers A
// queries for the names it was given, and NXDOMAIN for any other: the
// delivery client resolves endpoint host names through it, over the wire,
// as it would through the system's resolver.
type dnsServer struct {
	conn  net.PacketConn
	mu    sync.Mutex
	names map[string]net.IP // lower-case FQDN → IPv4 address
}

func startDNS(t *testing.T, names map[string]string) *dnsServer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{conn: conn, names: map[string]net.IP{}}
	for name, ip := range names {
		s.names[strings.ToLower(name)+"."] = net.ParseIP(ip).To4()
	}
	done := make(chan struct{})
	go func() { defer close(done); s.serve() }()
	t.Cleanup(func() { conn.Close(); <-done })
	return s
}

// resolver is a Go resolver that asks only this server.
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.conn.LocalAddr().String())
	}}
}

func (s *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, addr, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		s.mu.Lock()
		ip, known := s.names[strings.ToLower(q.Name.String())]
		s.mu.Unlock()
		rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess}
		if !known {
			rh.RCode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, rh)
		b.EnableCompression()
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if known && q.Type == dnsmessage.TypeA {
			var a dnsmessage.AResource
			copy(a.A[:], ip)
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, a)
		}
		msg, err := b.Finish()
		if err != nil {
			continue
		}
		_, _ = s.conn.WriteTo(msg, addr)
	}
}
