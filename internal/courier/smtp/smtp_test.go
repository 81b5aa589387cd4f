package smtp_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	netmail "net/mail"
	"strings"
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

// TestAddressOutsideASCII: an address outside ASCII goes with SMTPUTF8 to
// a server that offers it; to one that does not, nothing is sent and the
// failure is permanent and Unsupported (not a bounce), and the session
// stays good for the next message.
func TestAddressOutsideASCII(t *testing.T) {
	tests := []struct {
		name     string
		smtputf8 bool
		to       string
		from     string
		want     string // "delivered", or "unsupported"
	}{
		{"ASCIIWithoutSMTPUTF8", false, "ann@example.com", "", "delivered"},
		{"ASCIIWithSMTPUTF8", true, "ann@example.com", "", "delivered"},
		{"LocalPartWithSMTPUTF8", true, "jos\u00e9@example.com", "", "delivered"},
		{"DomainWithSMTPUTF8", true, "ivan@\u043f\u0440\u0438\u043c\u0435\u0440.com", "", "delivered"},
		{"ErrLocalPartWithoutSMTPUTF8", false, "jos\u00e9@example.com", "", "unsupported"},
		{"ErrDomainWithoutSMTPUTF8", false, "ivan@\u043f\u0440\u0438\u043c\u0435\u0440.com", "", "unsupported"},
		{"ErrFromWithoutSMTPUTF8", false, "ann@example.com", "Platform <r\u00e9ponse@example.com>", "unsupported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := smtptest.Start(t)
			if tt.smtputf8 {
				srv = smtptest.StartSMTPUTF8(t)
			}
			m := plainMailer(t, srv)
			one := numbered(1, tt.to)
			if tt.from != "" {
				one.From = tt.from
			}
			err := m.Deliver(context.Background(), one)
			var de *courier.DeliveryError
			switch tt.want {
			case "delivered":
				if err != nil {
					t.Fatalf("Deliver: %v", err)
				}
				msgs := srv.Messages()
				if len(msgs) != 1 || msgs[0].To != tt.to {
					t.Fatalf("server got %+v, want one message to %s", msgs, tt.to)
				}
				if want := tt.smtputf8; msgs[0].UTF8 != want {
					t.Errorf("MAIL FROM SMTPUTF8 = %v, want %v", msgs[0].UTF8, want)
				}
			case "unsupported":
				if !errors.As(err, &de) || !de.Permanent || !de.Unsupported || !strings.Contains(de.Detail, "SMTPUTF8") {
					t.Fatalf("Deliver = %#v, want a permanent Unsupported failure naming SMTPUTF8", err)
				}
				if n := len(srv.Received()); n != 0 {
					t.Errorf("the server received %d message bodies", n)
				}
				// The session was not spoilt: the next message goes on it.
				if err := m.Deliver(context.Background(), numbered(2, "ann@example.com")); err != nil {
					t.Fatalf("Deliver after: %v", err)
				}
				if n := srv.Connections(); n != 1 {
					t.Errorf("connections = %d, want 1", n)
				}
			}
		})
	}
}

// TestSubjectEncodedWords: a subject holding text that reads as an RFC
// 2047 encoded word decodes to exactly itself, through the real server,
// and an ordinary subject goes as it is.
func TestSubjectEncodedWords(t *testing.T) {
	long := "You are invited to " + strings.Repeat("=?utf-8?b?SGFja2Vk?= Zo\u00eb ", 8)
	tests := []struct {
		name, subject string
		raw           string // what the raw header must hold, "" for nothing
	}{
		{"Plain", "You are invited to Acme", "Subject: You are invited to Acme\r\n"},
		{"EncodedWordB", "You are invited to =?utf-8?b?SGFja2Vk?=", ""},
		{"EncodedWordQ", "You are invited to =?UTF-8?Q?=48acked?=", ""},
		{"EncodedWordWithNonASCII", "Zo\u00eb =?utf-8?b?SGFja2Vk?= \u6771\u4eac", ""},
		{"LongFolded", strings.TrimSpace(long), ""},
	}
	srv := smtptest.Start(t)
	m := plainMailer(t, srv)
	dec := new(mime.WordDecoder)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			one := numbered(i, "ann@example.com")
			one.Subject = tt.subject
			if err := m.Deliver(context.Background(), one); err != nil {
				t.Fatalf("Deliver: %v", err)
			}
			var got smtptest.Message
			for _, msg := range srv.Messages() {
				if msg.Attempt() == one.AttemptID {
					got = msg
				}
			}
			if got.Raw == nil {
				t.Fatal("the server has no such message")
			}
			parsed, err := netmail.ReadMessage(bytes.NewReader(got.Raw))
			if err != nil {
				t.Fatal(err)
			}
			subject, err := dec.DecodeHeader(parsed.Header.Get("Subject"))
			if err != nil {
				t.Fatalf("DecodeHeader: %v", err)
			}
			if subject != tt.subject {
				t.Errorf("decoded subject = %q, want %q", subject, tt.subject)
			}
			if tt.raw != "" && !bytes.Contains(got.Raw, []byte(tt.raw)) {
				t.Errorf("raw message lacks %q:\n%s", tt.raw, got.Raw)
			}
			for _, line := range strings.Split(string(got.Raw), "\r\n") {
				if len(line) > 78 {
					t.Errorf("header line of %d characters: %q", len(line), line)
				}
				if line == "" {
					break
				}
			}
		})
	}
}
