// Package smtp delivers courier's messages over SMTP with
// github.com/wneessen/go-mail, and builds the MIME message the local
// adapter writes to disk as well.
package smtp

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"

	"github.com/platformco/platform/internal/courier"
)

// TLS modes of COURIER_SMTP_TLS.
const (
	TLSStartTLS = "starttls"
	TLSImplicit = "tls"
	TLSNone     = "none"
)

// HeaderAttempt carries the attempt id, so a receiver can tell a repeated
// attempt from a repeated send; HeaderEmail carries the email's id.
const (
	HeaderAttempt = "X-Courier-Attempt"
	HeaderEmail   = "X-Courier-Email"
)

// Options configure the SMTP mailer.
type Options struct {
	// Addr is COURIER_SMTP_HOST, host:port.
	Addr string
	// TLS is one of TLSStartTLS (mandatory STARTTLS), TLSImplicit, TLSNone.
	TLS                string
	Username, Password string
	// Timeout bounds the connection and each command (default 30s).
	Timeout time.Duration
	// TLSConfig overrides the TLS settings (tests trust their own CA).
	TLSConfig *tls.Config
}

// Mailer implements courier.Mailer over SMTP. It keeps the sessions it
// opens and sends later messages over them, as mail transfer agents do: a
// message then costs MAIL, RCPT, DATA and RSET, not also a connection, a
// greeting, STARTTLS, AUTH and QUIT, and a relay counts one connection
// against its limits, not one a message. No NOOP probes a kept session
// first: the RSET that ended its last message just did, and a session
// that died since fails at MAIL, before anything of the message was sent.
// A session that fails in any way is closed, never reused.
type Mailer struct {
	host string
	opts []mail.Option
	idle chan *session
}

// A session is an open SMTP connection with the messages it carried.
type session struct {
	client *mail.Client
	conn   *gosmtp.Client // the connection client sends over, which knows the server's extensions
	sent   int
	idle   time.Time // since when it waits for a message
}

// Kept sessions: at most MaxIdle wait between messages (the send loop's
// workers); one retires after SessionMessages messages, the usual cap of a
// relay (Gmail's is 100), or after waiting SessionIdle, well before a
// server's own idle limit (RFC 5321 §4.5.3.2.7 suggests 5 minutes). A
// waiting session is looked at when next taken, or at Close: at most
// MaxIdle sockets stay open through a quiet spell.
const (
	MaxIdle         = 32
	SessionMessages = 100
	SessionIdle     = 30 * time.Second
)

var _ courier.Mailer = (*Mailer)(nil)

// New returns a mailer for o; its errors name what is wrong with o.
func New(o Options) (*Mailer, error) {
	host, portStr, err := net.SplitHostPort(o.Addr)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || host == "" || port < 1 || port > 65535 {
		return nil, fmt.Errorf("must be host:port, such as smtp.example.com:587")
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	opts := []mail.Option{mail.WithPort(port), mail.WithTimeout(o.Timeout), mail.WithHELO(helo()), mail.WithoutNoop()}
	switch o.TLS {
	case TLSStartTLS, "":
		opts = append(opts, mail.WithTLSPortPolicy(mail.TLSMandatory))
	case TLSImplicit:
		opts = append(opts, mail.WithSSLPort(false))
	case TLSNone:
		opts = append(opts, mail.WithTLSPortPolicy(mail.NoTLS))
	default:
		return nil, fmt.Errorf("TLS mode must be starttls, tls or none")
	}
	// WithPort after the TLS policy: the port policies pick a default
	// port of their own.
	opts = append(opts, mail.WithPort(port))
	if o.TLSConfig != nil {
		opts = append(opts, mail.WithTLSConfig(o.TLSConfig))
	}
	if o.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(o.Username), mail.WithPassword(o.Password))
	}
	if _, err := mail.NewClient(host, opts...); err != nil {
		return nil, err
	}
	return &Mailer{host: host, opts: opts, idle: make(chan *session, MaxIdle)}, nil
}

func helo() string { return "courier.localhost" }

// Deliver sends m once. A 5xx answer to MAIL, RCPT or DATA is a permanent
// *courier.DeliveryError; everything else (4xx, connection trouble,
// timeouts) is temporary. A message the server accepted is delivered,
// whatever becomes of the session after: retrying it would send it twice.
// An address outside ASCII goes only to a server that offers SMTPUTF8
// (RFC 6531); to one that does not, nothing is sent and the failure is
// permanent and Unsupported (the server could only refuse the address or
// mangle it, and no retry changes what it offers).
func (ml *Mailer) Deliver(ctx context.Context, m courier.Message) error {
	msg, err := Build(m)
	if err != nil {
		return &courier.DeliveryError{Permanent: true, Detail: err.Error()}
	}
	utf8 := needsSMTPUTF8(m)
	if s := ml.take(); s != nil {
		if utf8 && !s.smtputf8() {
			ml.put(s)
			return errNoSMTPUTF8
		}
		err := s.send(msg)
		if !sessionGone(err) {
			return ml.sent(s, msg, err)
		}
		// The kept session was gone (the server closed it, or its
		// deadline passed) before the message began: it goes on a new one.
		s.close()
	}
	s, err := ml.dial(ctx)
	if err != nil {
		return &courier.DeliveryError{Detail: oneLine("dial failed: " + err.Error())}
	}
	if utf8 && !s.smtputf8() {
		ml.put(s)
		return errNoSMTPUTF8
	}
	return ml.sent(s, msg, s.send(msg))
}

// errNoSMTPUTF8 is a message with an address outside ASCII for a server
// that does not offer SMTPUTF8.
var errNoSMTPUTF8 = &courier.DeliveryError{Permanent: true, Unsupported: true,
	Detail: "the address is not ASCII and the SMTP server does not offer SMTPUTF8 (RFC 6531); the message was not sent"}

// needsSMTPUTF8 reports whether m's envelope holds an address outside
// ASCII, which SMTP carries only with the SMTPUTF8 extension.
func needsSMTPUTF8(m courier.Message) bool {
	from := m.From
	if a, err := netmail.ParseAddress(m.From); err == nil {
		from = a.Address
	}
	return !ascii(m.To) || !ascii(from)
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// sent settles s after it carried msg with err: kept for the next message
// after a success, closed after any failure. A message the server accepted
// is delivered even if the RSET after it failed.
func (ml *Mailer) sent(s *session, msg *mail.Msg, err error) error {
	if err != nil {
		s.close()
		if msg.IsDelivered() {
			return nil
		}
		return deliveryError(err)
	}
	s.sent++
	ml.put(s)
	return nil
}

// sessionGone reports whether err is a kept session found dead before the
// server took any part of the message: the connection failed (no SMTP
// reply) at its check or at MAIL, the first command of a message.
func sessionGone(err error) bool {
	var se *mail.SendError
	return errors.As(err, &se) && (se.Reason == mail.ErrConnCheck || se.Reason == mail.ErrSMTPMailFrom) && se.ErrorCode() == 0
}

// Close ends the kept sessions (QUIT). Deliveries after it open new ones.
func (ml *Mailer) Close() {
	for {
		select {
		case s := <-ml.idle:
			s.close()
		default:
			return
		}
	}
}

// take returns a kept session that may carry another message, or nil.
func (ml *Mailer) take() *session {
	for {
		select {
		case s := <-ml.idle:
			if time.Since(s.idle) < SessionIdle {
				return s
			}
			s.close()
		default:
			return nil
		}
	}
}

// put keeps s for the next message, unless it has carried its share or
// enough sessions wait already.
func (ml *Mailer) put(s *session) {
	if s.sent >= SessionMessages {
		s.close()
		return
	}
	s.idle = time.Now()
	select {
	case ml.idle <- s:
	default:
		s.close()
	}
}

func (ml *Mailer) dial(ctx context.Context) (*session, error) {
	c, err := mail.NewClient(ml.host, ml.opts...)
	if err != nil {
		return nil, err
	}
	conn, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return nil, err
	}
	return &session{client: c, conn: conn}, nil
}

// send sends msg over s.
func (s *session) send(msg *mail.Msg) error { return s.client.SendWithSMTPClient(s.conn, msg) }

// smtputf8 reports whether the server offered SMTPUTF8 in its EHLO reply.
func (s *session) smtputf8() bool {
	ok, _ := s.conn.Extension("SMTPUTF8")
	return ok
}

// close ends s with QUIT; a session already broken just closes.
func (s *session) close() { _ = s.client.CloseWithSMTPClient(s.conn) }

// deliveryError classifies a failed send.
func deliveryError(err error) error {
	var se *mail.SendError
	if errors.As(err, &se) {
		code := se.ErrorCode()
		permanent := code >= 500 && code < 600 && !se.IsTemp() &&
			(se.Reason == mail.ErrSMTPRcptTo || se.Reason == mail.ErrSMTPData ||
				se.Reason == mail.ErrSMTPDataClose || se.Reason == mail.ErrSMTPMailFrom)
		return &courier.DeliveryError{Permanent: permanent, Detail: oneLine(err.Error())}
	}
	return &courier.DeliveryError{Detail: oneLine(err.Error())}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// setSubject sets msg's Subject. A subject that holds "=?" could hold text
// that reads as an RFC 2047 encoded word ("=?utf-8?b?…?=" in an account
// name), which a mail reader would decode into other text; such a subject
// is sent wholly as encoded words, so it decodes to exactly itself. Any
// other goes as go-mail writes it (encoded only where not ASCII).
func setSubject(msg *mail.Msg, subject string) {
	if !strings.Contains(subject, "=?") {
		msg.Subject(subject)
		return
	}
	msg.SetGenHeaderPreformatted(mail.HeaderSubject, encodeWords(subject))
}

// encodeWords writes s as base64 encoded words (RFC 2047), split between
// characters, never inside one, and folded one to a line, so no line is
// longer than 78 characters (RFC 5322), "Subject: " included.
func encodeWords(s string) string {
	const maxChunk = 39 // 52 base64 characters; with "=?UTF-8?B?" and "?=", 64
	var words []string
	for s != "" {
		n := 0
		for _, r := range s {
			size := utf8.RuneLen(r)
			if size < 0 {
				size = 1 // invalid UTF-8 is one byte the range yields as U+FFFD
			}
			if n+size > maxChunk && n > 0 {
				break
			}
			n += size
		}
		words = append(words, "=?UTF-8?B?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, "\r\n ")
}

// Build renders m as a MIME message: a plain-text part with an HTML
// alternative, the attempt and email ids in headers, and a Message-ID
// that is the attempt's.
func Build(m courier.Message) (*mail.Msg, error) {
	msg := mail.NewMsg()
	from, err := netmail.ParseAddress(m.From)
	if err != nil {
		return nil, fmt.Errorf("from address: %w", err)
	}
	msg.FromMailAddress(from)
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("to address: %w", err)
	}
	setSubject(msg, m.Subject)
	domain := "courier.localhost"
	if at := strings.LastIndexByte(from.Address, '@'); at >= 0 {
		domain = from.Address[at+1:]
	}
	msg.SetMessageIDWithValue(m.AttemptID + "@" + domain)
	msg.SetGenHeader(mail.Header(HeaderAttempt), m.AttemptID)
	msg.SetGenHeader(mail.Header(HeaderEmail), m.ID)
	msg.SetDate()
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(mail.TypeTextHTML, m.HTML)
	return msg, nil
}
