package courier_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"mime"
	"net"
	"net/mail"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/courier/smtptest"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

type env struct {
	db     *sqldb.DB
	svc    *courier.Service
	smtp   *smtptest.Server
	sender *courier.Sender
}

func fastOptions() courier.SenderOptions {
	return courier.SenderOptions{From: "Platform <no-reply@example.com>", Lease: time.Minute,
		RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, Poll: 5 * time.Millisecond}
}

func newEnv(t *testing.T, engine sqldb.Engine, opts courier.SenderOptions) *env {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	return newEnvOn(t, db, smtptest.Start(t), opts)
}

func newEnvOn(t *testing.T, db *sqldb.DB, srv *smtptest.Server, opts courier.SenderOptions) *env {
	t.Helper()
	sealer, err := seal.New(testKey)
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := courier.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	svc := courier.NewService(sqlstore.New(db), sealer)
	mailer, err := smtp.New(smtp.Options{Addr: srv.Addr, TLS: smtp.TLSNone, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &env{db: db, svc: svc, smtp: srv, sender: courier.NewSender(svc, renderer, mailer, opts, discard())}
}

func (e *env) send(t *testing.T, template, to string, data map[string]any) courier.Email {
	t.Helper()
	m, err := e.svc.Send(context.Background(), "identity", courier.SendRequest{Template: template, To: to, Data: data})
	if err != nil {
		t.Fatalf("Send(%s to %s): %v", template, to, err)
	}
	return m
}

// settle runs the send loop until the message's status is want.
func (e *env) settle(t *testing.T, id, want string) courier.Email {
	t.Helper()
	var got courier.Email
	smtptest.WaitFor(t, "status "+want, func() bool {
		if _, err := e.sender.SendDue(context.Background()); err != nil {
			t.Fatalf("SendDue: %v", err)
		}
		var err error
		got, err = e.svc.Email(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == want
	})
	return got
}

func sealedData(t *testing.T, db *sqldb.DB, id string) []byte {
	t.Helper()
	var b []byte
	if err := db.QueryRow(context.Background(), `SELECT data_sealed FROM emails WHERE id = $1`, id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

const link = "https://app.example.com/verify?token=one-time-secret"

func TestSendLoopDeliversOverSMTP(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, fastOptions())
		m := e.send(t, courier.TemplateVerifyEmail, "ann@example.com", map[string]any{"link": link})
		if m.Status != courier.StatusQueued {
			t.Fatalf("status = %s, want queued", m.Status)
		}
		if b := sealedData(t, e.db, m.ID); len(b) == 0 || strings.Contains(string(b), "one-time-secret") {
			t.Fatalf("data_sealed = %q, want the data sealed", b)
		}
		got := e.settle(t, m.ID, courier.StatusDelivered)
		if got.Attempts != 1 {
			t.Errorf("attempts = %d, want 1", got.Attempts)
		}
		if b := sealedData(t, e.db, m.ID); b != nil {
			t.Errorf("data_sealed kept after delivery")
		}
		msgs := e.smtp.Messages()
		if len(msgs) != 1 {
			t.Fatalf("server got %d messages, want 1", len(msgs))
		}
		raw := string(msgs[0].Raw)
		for _, want := range []string{"To: <ann@example.com>", "Subject: Confirm your email address", "text/plain", "text/html", "one-time-secret", "X-Courier-Email: " + m.ID} {
			if !strings.Contains(raw, want) {
				t.Errorf("message lacks %q:\n%s", want, raw)
			}
		}
		if msgs[0].From != "no-reply@example.com" || msgs[0].Attempt() == "" {
			t.Errorf("envelope from %q attempt %q", msgs[0].From, msgs[0].Attempt())
		}
	})
}

func TestSendLoopRetriesTemporaryFailures(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, fastOptions())
		e.smtp.Set("bob@example.com", smtptest.TempFailOne)
		m := e.send(t, courier.TemplateWelcome, "bob@example.com", nil)
		got := e.settle(t, m.ID, courier.StatusDelivered)
		if got.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", got.Attempts)
		}
		statuses := []string{}
		for _, h := range got.History {
			statuses = append(statuses, h.Status)
		}
		if want := []string{"queued", "queued", "delivered"}; !slices.Equal(statuses, want) || !strings.Contains(got.History[1].Detail, "451") {
			t.Errorf("history = %+v, want %v with the 451 recorded", got.History, want)
		}
	})
}

func TestSendLoopBouncesPermanentRefusals(t *testing.T) {
	tests := []struct {
		name string
		b    smtptest.Behaviour
		want string
	}{
		{"RefusedAtRCPT", smtptest.RefuseRcpt, "550"},
		{"RefusedAtDATA", smtptest.RefuseData, "554"},
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := newEnv(t, engine, fastOptions())
				e.smtp.Set("carol@example.com", tt.b)
				m := e.send(t, courier.TemplateVerifyEmail, "carol@example.com", map[string]any{"link": link})
				got := e.settle(t, m.ID, courier.StatusBounced)
				if last := got.History[len(got.History)-1]; !strings.Contains(last.Detail, tt.want) {
					t.Errorf("bounce detail = %q, want the server's %s", last.Detail, tt.want)
				}
				if b := sealedData(t, e.db, m.ID); b != nil {
					t.Errorf("data_sealed kept after the bounce")
				}
				// A hard bounce suppresses every later send, security messages too.
				again := e.send(t, courier.TemplatePasswordReset, "Carol@Example.com", map[string]any{"link": link})
				if again.Status != courier.StatusSuppressed {
					t.Errorf("send after a hard bounce = %s, want suppressed", again.Status)
				}
			})
		}
	})
}

// TestSendLoopFailsAddressesOutsideASCIIWithoutSMTPUTF8: a recipient
// outside ASCII and a server that does not offer SMTPUTF8: nothing is
// sent, the message fails with the reason, and it is no bounce: no
// courier.email.bounced, the address not suppressed. The same address
// through a server that offers SMTPUTF8 is delivered.
func TestSendLoopFailsAddressesOutsideASCIIWithoutSMTPUTF8(t *testing.T) {
	const to = "jos\u00e9@example.com"
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, fastOptions())
		m := e.send(t, courier.TemplateWelcome, to, nil)
		got := e.settle(t, m.ID, courier.StatusFailed)
		if last := got.History[len(got.History)-1]; !strings.Contains(last.Detail, "SMTPUTF8") {
			t.Errorf("failure detail = %q, want it to name SMTPUTF8", last.Detail)
		}
		if got.Attempts != 1 {
			t.Errorf("attempts = %d, want 1 (no retry)", got.Attempts)
		}
		if n := len(e.smtp.Received()); n != 0 {
			t.Errorf("the server received %d message bodies", n)
		}
		rows, err := outbox.List(context.Background(), e.db, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Envelope.Type == courier.EventEmailBounced {
				t.Errorf("a bounce was emitted: %s", r.Envelope.Data)
			}
		}
		again := e.send(t, courier.TemplateWelcome, to, nil)
		if again.Status != courier.StatusQueued {
			t.Fatalf("send after the failure = %s, want queued (the address is not suppressed)", again.Status)
		}

		utf8 := newEnvOn(t, e.db, smtptest.StartSMTPUTF8(t), fastOptions())
		utf8.settle(t, again.ID, courier.StatusDelivered)
		msgs := utf8.smtp.Messages()
		if len(msgs) != 1 || msgs[0].To != to || !msgs[0].UTF8 {
			t.Errorf("SMTPUTF8 server got %+v, want one message to %s with SMTPUTF8", msgs, to)
		}
	})
}

// TestSendLoopSubjectNeverDecodesAccountNameAsEncodedWord: an account
// name that reads as an RFC 2047 encoded word reaches the Subject as
// literal text, through the send loop and a real SMTP server.
func TestSendLoopSubjectNeverDecodesAccountNameAsEncodedWord(t *testing.T) {
	const name = "=?utf-8?b?WW91ciBhY2NvdW50IGlzIHN1c3BlbmRlZA==?="
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, fastOptions())
		m := e.send(t, courier.TemplateInvitation, "ann@example.com",
			map[string]any{"link": link, "account_name": name, "inviter_email": "bob@example.com"})
		e.settle(t, m.ID, courier.StatusDelivered)
		msgs := e.smtp.Messages()
		if len(msgs) != 1 {
			t.Fatalf("server got %d messages, want 1", len(msgs))
		}
		parsed, err := mail.ReadMessage(bytes.NewReader(msgs[0].Raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "You are invited to " + name; got != want {
			t.Errorf("decoded subject = %q, want %q", got, want)
		}
	})
}

func TestComplaintSuppressesAllButSecurityMessages(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, fastOptions())
		if _, err := e.svc.ReportComplaint(context.Background(), "dan@example.com", courier.ReasonComplaint); err != nil {
			t.Fatal(err)
		}
		if m := e.send(t, courier.TemplateWelcome, "dan@example.com", nil); m.Status != courier.StatusSuppressed {
			t.Errorf("welcome after a complaint = %s, want suppressed", m.Status)
		}
		m := e.send(t, courier.TemplatePasswordReset, "dan@example.com", map[string]any{"link": link})
		if m.Status != courier.StatusQueued {
			t.Fatalf("password_reset after a complaint = %s, want queued", m.Status)
		}
		e.settle(t, m.ID, courier.StatusDelivered)
	})
}

func TestSendLoopGivesUpAfterADay(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		opts := fastOptions()
		opts.Now = func() time.Time { return time.Now().Add(25 * time.Hour) }
		e := newEnv(t, engine, opts)
		e.smtp.Set("eve@example.com", smtptest.TempFail)
		m := e.send(t, courier.TemplateWelcome, "eve@example.com", nil)
		e.settle(t, m.ID, courier.StatusFailed)
		if b := sealedData(t, e.db, m.ID); b != nil {
			t.Errorf("data_sealed kept after giving up")
		}
	})
}

func TestSMTPServerDownMessagesWaitThenGo(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens here: connections are refused
		e := newEnvOn(t, db, &smtptest.Server{Addr: addr}, fastOptions())
		m := e.send(t, courier.TemplateWelcome, "fay@example.com", nil)
		smtptest.WaitFor(t, "a failed attempt", func() bool {
			e.sender.SendDue(context.Background())
			got, _ := e.svc.Email(context.Background(), m.ID)
			return got.Attempts >= 2
		})
		if got, _ := e.svc.Email(context.Background(), m.ID); got.Status != courier.StatusQueued {
			t.Fatalf("status with the server down = %s, want queued", got.Status)
		}
		srv := smtptest.StartOn(t, addr)
		got := e.settle(t, m.ID, courier.StatusDelivered)
		if len(srv.Messages()) != 1 || got.Attempts < 3 {
			t.Errorf("server got %d messages after %d attempts", len(srv.Messages()), got.Attempts)
		}
	})
}

// TestEventsMeetTheContract drives every outcome through the real send
// loop and validates each outbox row as the publisher builds it: the
// envelope, then the payload against its schema. Every declared type is seen.
func TestEventsMeetTheContract(t *testing.T) {
	dir, err := events.LocateSchemas(".")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := events.LoadContract(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		e := newEnv(t, engine, fastOptions())
		e.smtp.Set("bounce@example.com", smtptest.RefuseRcpt)
		ok := e.send(t, courier.TemplateInvitation, "ann@example.com", map[string]any{"link": link, "account_name": "Engines", "inviter_email": "ada@example.com"})
		bad := e.send(t, courier.TemplateWelcome, "bounce@example.com", nil)
		e.settle(t, ok.ID, courier.StatusDelivered)
		e.settle(t, bad.ID, courier.StatusBounced)
		e.send(t, courier.TemplateWelcome, "bounce@example.com", nil)
		if _, err := e.svc.ReportComplaint(ctx, "gil@example.com", courier.ReasonComplaint); err != nil {
			t.Fatal(err)
		}
		rows, err := outbox.List(ctx, e.db, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, r := range rows {
			if err := contract.Validate(r.Envelope); err != nil {
				t.Errorf("outbox row %d: %v\n%s", r.Seq, err, r.Envelope.Data)
			}
			b, _ := json.Marshal(r.Envelope)
			if _, err := contract.ValidateJSON(b); err != nil {
				t.Errorf("outbox row %d on the wire: %v", r.Seq, err)
			}
			if r.Envelope.Source != "courier" {
				t.Errorf("row %d source = %s", r.Seq, r.Envelope.Source)
			}
			if strings.Contains(string(r.Envelope.Data), "one-time-secret") {
				t.Errorf("row %d carries the template data: %s", r.Seq, r.Envelope.Data)
			}
			seen[r.Envelope.Type]++
		}
		for _, typ := range courier.EventTypes() {
			if seen[typ] == 0 {
				t.Errorf("no %s row", typ)
			}
		}
	})
}

// TestCrashMidSendNeverSendsTwiceWithinAnAttempt kills a process running
// the send loop while the SMTP server holds its DATA. The message is then
// sent again under a new attempt id (at least once), and no attempt id
// ever reaches the server twice.
func TestCrashMidSendNeverSendsTwiceWithinAnAttempt(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		url := sqltest.URL(t, engine)
		db, err := sqldb.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Migrate(context.Background(), sqlstore.Migrations); err != nil {
			t.Fatal(err)
		}
		srv := smtptest.Start(t)
		srv.Set("hal@example.com", smtptest.HoldData)
		opts := fastOptions()
		opts.Lease = time.Second
		e := newEnvOn(t, db, srv, opts)
		m := e.send(t, courier.TemplateVerifyEmail, "hal@example.com", map[string]any{"link": link})

		child := exec.Command(os.Args[0], "-test.run=^TestHelperSendLoop$", "-test.count=1")
		child.Env = append(os.Environ(), "COURIER_HELPER_DB="+url, "COURIER_HELPER_SMTP="+srv.Addr)
		child.Stdout, child.Stderr = os.Stderr, os.Stderr
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		smtptest.WaitFor(t, "the child's DATA to be held", func() bool { return srv.Holding() == 1 })
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		// The server accepts what the dead process sent: the mail system
		// has the message, courier never heard.
		srv.Release()
		smtptest.WaitFor(t, "the held message to be accepted", func() bool { return len(srv.Messages()) == 1 })
		if got, _ := e.svc.Email(context.Background(), m.ID); got.Status != courier.StatusQueued {
			t.Fatalf("status after the crash = %s, want queued", got.Status)
		}
		got := e.settle(t, m.ID, courier.StatusDelivered)
		if got.Attempts != 2 {
			t.Errorf("attempts = %d, want 2 (the killed one and the next)", got.Attempts)
		}
		received := srv.Received()
		if len(received) != 2 {
			t.Errorf("attempt ids seen = %v, want 2", received)
		}
		for id, n := range received {
			if n != 1 {
				t.Errorf("attempt %s reached the server %d times, want once", id, n)
			}
		}
	})
}

// TestHelperSendLoop is the process TestCrashMidSendNeverSendsTwiceWithinAnAttempt kills.
func TestHelperSendLoop(t *testing.T) {
	url, addr := os.Getenv("COURIER_HELPER_DB"), os.Getenv("COURIER_HELPER_SMTP")
	if url == "" {
		t.Skip("run by TestCrashMidSendNeverSendsTwiceWithinAnAttempt")
	}
	db, err := sqldb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	opts := fastOptions()
	opts.Lease = time.Second
	e := newEnvOn(t, db, &smtptest.Server{Addr: addr}, opts)
	e.sender.Run(context.Background()) // until killed
}
