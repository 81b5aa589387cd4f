// Package smtp delivers courier's messages over SMTP with
// github.com/wneessen/go-mail, and builds the MIME message the local
// adapter writes to disk as well.
package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/wneessen/go-mail"

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

// Mailer implements courier.Mailer over SMTP: one connection per message.
type Mailer struct {
	host string
	opts []mail.Option
}

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
	opts := []mail.Option{mail.WithPort(port), mail.WithTimeout(o.Timeout), mail.WithHELO(helo())}
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
	return &Mailer{host: host, opts: opts}, nil
}

func helo() string { return "courier.localhost" }

// Deliver sends m once. A 5xx answer to MAIL, RCPT or DATA is a permanent
// *courier.DeliveryError; everything else (4xx, connection trouble,
// timeouts) is temporary.
func (ml *Mailer) Deliver(ctx context.Context, m courier.Message) error {
	msg, err := Build(m)
	if err != nil {
		return &courier.DeliveryError{Permanent: true, Detail: err.Error()}
	}
	client, err := mail.NewClient(ml.host, ml.opts...)
	if err != nil {
		return err
	}
	err = client.DialAndSendWithContext(ctx, msg)
	if err == nil {
		return nil
	}
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
	msg.Subject(m.Subject)
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
