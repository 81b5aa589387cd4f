// Package smtptest runs a real SMTP server in process
// (github.com/emersion/go-smtp) for courier's tests: it records every
// message it accepts and can be told, per recipient, to fail temporarily,
// refuse at RCPT or DATA, or hold DATA until released.
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Behaviour is how the server answers one recipient.
type Behaviour int

const (
	Accept          Behaviour = iota
	TempFail                  // 451 at RCPT
	RefuseRcpt                // 550 at RCPT
	RefuseData                // 554 after DATA
	HoldData                  // DATA waits until Release, then accepts
	TempFailOne               // 451 at RCPT the first time, then accept
	HangUpAfterData           // accept the message, then close the connection before the next command
)

// Message is one accepted message.
type Message struct {
	From, To string
	// UTF8 is MAIL FROM's SMTPUTF8 parameter (RFC 6531).
	UTF8   bool
	Header mail.Header
	Raw    []byte
}

// Attempt is the X-Courier-Attempt header.
func (m Message) Attempt() string { return m.Header.Get("X-Courier-Attempt") }

// Server is the running server.
type Server struct {
	Addr string

	mu        sync.Mutex
	behaviour map[string]Behaviour
	tempOnce  map[string]bool
	messages  []Message
	received  map[string]int // attempt id → DATA bodies received (accepted or held)
	held      chan struct{}
	holding   int
	conns     []net.Conn // every connection accepted, open or not
	srv       *smtp.Server
}

// Start runs a server on a loopback port until the test ends. It offers
// no SMTPUTF8, and takes whatever address a client sends regardless, as
// many servers do.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, func(*smtp.Server) {})
}

// StartSMTPUTF8 runs a server like Start's that offers SMTPUTF8 (RFC 6531).
func StartSMTPUTF8(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, func(srv *smtp.Server) { srv.EnableSMTPUTF8 = true })
}

func serveOn(t testing.TB, ln net.Listener, configure func(*smtp.Server)) *Server {
	s := newServer(ln)
	configure(s.srv)
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() {
		s.Release()
		s.srv.Close()
	})
	return s
}

func newServer(ln net.Listener) *Server {
	s := &Server{Addr: ln.Addr().String(), behaviour: map[string]Behaviour{}, tempOnce: map[string]bool{},
		received: map[string]int{}, held: make(chan struct{})}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.conns = append(s.conns, c.Conn())
		return &session{s: s, conn: c.Conn()}, nil
	}))
	s.srv.Domain = "localhost"
	s.srv.ReadTimeout, s.srv.WriteTimeout = 30*time.Second, 30*time.Second
	s.srv.MaxMessageBytes = 1 << 20
	return s
}

// Set makes the server answer rcpt with b.
func (s *Server) Set(rcpt string, b Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behaviour[strings.ToLower(rcpt)] = b
}

// Release lets every held DATA finish (and any later one pass at once).
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.held:
	default:
		close(s.held)
	}
}

// Holding reports how many DATA commands are waiting for Release.
func (s *Server) Holding() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holding
}

// Messages returns the accepted messages so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Received returns how many message bodies each attempt id sent, whether
// or not the server went on to accept them.
func (s *Server) Received() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.received))
	for k, v := range s.received {
		out[k] = v
	}
	return out
}

// Connections reports how many connections the server has accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// DropConnections closes every open connection, as a server does to idle
// clients, without a word.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// WaitFor polls until cond holds or 10 s pass.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type session struct {
	s      *Server
	conn   net.Conn
	from   string
	utf8   bool
	to     []string
	hangUp bool // the message just accepted asked for HangUpAfterData
}

// Reset runs after each message, once its answer is written, and on RSET.
func (ss *session) Reset() {
	ss.from, ss.utf8, ss.to = "", false, nil
	if ss.hangUp {
		_ = ss.conn.Close()
	}
}

func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	ss.from, ss.utf8 = from, opts != nil && opts.UTF8
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s := ss.s
	s.mu.Lock()
	b := s.behaviour[strings.ToLower(to)]
	if b == TempFailOne {
		if s.tempOnce[to] {
			b = Accept
		} else {
			s.tempOnce[to] = true
			b = TempFail
		}
	}
	s.mu.Unlock()
	switch b {
	case TempFail:
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	case RefuseRcpt:
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return errors.New("unparseable message")
	}
	s := ss.s
	s.mu.Lock()
	s.received[msg.Header.Get("X-Courier-Attempt")]++
	var b Behaviour
	for _, to := range ss.to {
		switch bb := s.behaviour[strings.ToLower(to)]; bb {
		case RefuseData, HoldData:
			b = bb
		case HangUpAfterData:
			ss.hangUp = true
		}
	}
	held := s.held
	if b == HoldData {
		s.holding++
	}
	s.mu.Unlock()
	switch b {
	case RefuseData:
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "message refused"}
	case HoldData:
		<-held
		s.mu.Lock()
		s.holding--
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, to := range ss.to {
		s.messages = append(s.messages, Message{From: ss.from, To: to, UTF8: ss.utf8, Header: msg.Header, Raw: raw})
	}
	return nil
}

// StartTLS runs a server that offers STARTTLS with a certificate for
// 127.0.0.1 and returns it with a pool that trusts that certificate.
func StartTLS(t testing.TB) (*Server, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtptest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"127.0.0.1"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(ln)
	s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() {
		s.Release()
		s.srv.Close()
	})
	return s, pool
}

// StartOn runs a server on addr (a port a test freed) until the test ends.
func StartOn(t testing.TB, addr string) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, func(*smtp.Server) {})
}
