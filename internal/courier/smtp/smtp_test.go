package smtp_test

import (
	"context"
	"crypto/tls"
	"errors"
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
