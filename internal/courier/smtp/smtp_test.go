package smtp_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/courier/smtptest"
)

func msg() courier.Message {
	return courier.Message{ID: "e1", AttemptID: "a1", From: "Platform <no-reply@example.com>", To: "ann@example.com",
		Subject: "Hi", Text: "text", HTML: "<p>html</p>", CreatedAt: time.Now()}
}

func TestDeliverOverSTARTTLS(t *testing.T) {
	srv, pool := smtptest.StartTLS(t)
	m, err := smtp.New(smtp.Options{Addr: srv.Addr, TLS: smtp.TLSStartTLS, Timeout: 5 * time.Second,
		TLSConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Deliver(context.Background(), msg()); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Errorf("server got %d messages, want 1", n)
	}
}

// TestMandatorySTARTTLSNeverFallsBackToPlainText: a server that offers no
// STARTTLS gets nothing, and the failure is temporary (it may be mended).
func TestMandatorySTARTTLSNeverFallsBackToPlainText(t *testing.T) {
	srv := smtptest.Start(t)
	m, err := smtp.New(smtp.Options{Addr: srv.Addr, TLS: smtp.TLSStartTLS, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Deliver(context.Background(), msg())
	var de *courier.DeliveryError
	if err == nil || (errors.As(err, &de) && de.Permanent) {
		t.Fatalf("Deliver = %v, want a temporary failure", err)
	}
	if n := len(srv.Received()); n != 0 {
		t.Errorf("the server received %d message bodies in plain text", n)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []smtp.Options{{Addr: "no-port"}, {Addr: "h:0"}, {Addr: "h:25", TLS: "ssl"}} {
		if _, err := smtp.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

func plainMailer(t *testing.T, srv *smtptest.Server) *smtp.Mailer {
	t.Helper()
	m, err := smtp.New(smtp.Options{Addr: srv.Addr, TLS: smtp.TLSNone, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func numbered(i int, to string) courier.Message {
	m := msg()
	m.ID, m.AttemptID, m.To = fmt.Sprintf("e%d", i), fmt.Sprintf("a%d", i), to
	return m
}

// TestSessions: messages one after another share a session until it has
// carried SessionMessages; a session the server dropped while it waited is
// replaced without losing or repeating the message; a message the server
// accepted is delivered even when the connection dies right after; a
// refused one fails alone, on a session that is not kept.
func TestSessions(t *testing.T) {
	tests := []struct {
		name string
		// run delivers through m to srv and returns how many messages the
		// server should hold and over how many connections.
		run func(t *testing.T, m *smtp.Mailer, srv *smtptest.Server) (messages, connections int)
	}{
		{"OneAfterAnother", func(t *testing.T, m *smtp.Mailer, _ *smtptest.Server) (int, int) {
			for i := range 5 {
				if err := m.Deliver(context.Background(), numbered(i, "ann@example.com")); err != nil {
					t.Fatalf("Deliver %d: %v", i, err)
				}
			}
			return 5, 1
		}},
		{"RetiredAfterItsShare", func(t *testing.T, m *smtp.Mailer, _ *smtptest.Server) (int, int) {
			for i := range smtp.SessionMessages + 1 {
				if err := m.Deliver(context.Background(), numbered(i, "ann@example.com")); err != nil {
					t.Fatalf("Deliver %d: %v", i, err)
				}
			}
			return smtp.SessionMessages + 1, 2
		}},
		{"DroppedWhileIdle", func(t *testing.T, m *smtp.Mailer, srv *smtptest.Server) (int, int) {
			if err := m.Deliver(context.Background(), numbered(1, "ann@example.com")); err != nil {
				t.Fatal(err)
			}
			srv.DropConnections()
			if err := m.Deliver(context.Background(), numbered(2, "ann@example.com")); err != nil {
				t.Fatalf("Deliver after the server dropped the session: %v", err)
			}
			return 2, 2
		}},
		{"AcceptedThenHungUp", func(t *testing.T, m *smtp.Mailer, srv *smtptest.Server) (int, int) {
			srv.Set("bob@example.com", smtptest.HangUpAfterData)
			if err := m.Deliver(context.Background(), numbered(1, "bob@example.com")); err != nil {
				t.Fatalf("Deliver of an accepted message = %v, want delivered", err)
			}
			if err := m.Deliver(context.Background(), numbered(2, "ann@example.com")); err != nil {
				t.Fatal(err)
			}
			return 2, 2
		}},
		{"RefusedRecipient", func(t *testing.T, m *smtp.Mailer, srv *smtptest.Server) (int, int) {
			srv.Set("nobody@example.com", smtptest.RefuseRcpt)
			if err := m.Deliver(context.Background(), numbered(1, "ann@example.com")); err != nil {
				t.Fatal(err)
			}
			err := m.Deliver(context.Background(), numbered(2, "nobody@example.com"))
			var de *courier.DeliveryError
			if !errors.As(err, &de) || !de.Permanent {
				t.Fatalf("Deliver to a refused recipient = %v, want a permanent failure", err)
			}
			if err := m.Deliver(context.Background(), numbered(3, "ann@example.com")); err != nil {
				t.Fatal(err)
			}
			return 2, 2
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := smtptest.Start(t)
			m := plainMailer(t, srv)
			messages, connections := tt.run(t, m, srv)
			if n := len(srv.Messages()); n != messages {
				t.Errorf("server holds %d messages, want %d", n, messages)
			}
			for attempt, n := range srv.Received() {
				if n != 1 {
					t.Errorf("attempt %s sent %d times", attempt, n)
				}
			}
			if n := srv.Connections(); n != connections {
				t.Errorf("%d connections, want %d", n, connections)
			}
		})
	}
}

// TestSessionsConcurrently: senders at once never share a session, so the
// connections are at most the senders; Close ends the kept ones, and the
// next message opens its own.
func TestSessionsConcurrently(t *testing.T) {
	srv := smtptest.Start(t)
	m := plainMailer(t, srv)
	const senders, each = 8, 10
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for i := range each {
				if err := m.Deliver(context.Background(), numbered(w*each+i, "ann@example.com")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(srv.Messages()); n != senders*each {
		t.Errorf("server holds %d messages, want %d", n, senders*each)
	}
	if n := srv.Connections(); n > senders {
		t.Errorf("%d connections for %d senders", n, senders)
	}
	before := srv.Connections()
	m.Close()
	if err := m.Deliver(context.Background(), numbered(1000, "ann@example.com")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Connections(); n != before+1 {
		t.Errorf("after Close: %d connections, want %d", n, before+1)
	}
}
