// Package push delivers courier's Web Push notifications (courier.md
// section 6): a loop claims queued pushes under a lease, encrypts each
// payload for its subscription (RFC 8291, aes128gcm) and posts it to the
// push service with a VAPID token (RFC 8292) through
// github.com/SherClockHolmes/webpush-go, over the webhooks' guarded
// client (public addresses only outside development). A 404 or 410
// deletes the subscription; 429, 5xx and connection failures are retried
// on courier.RetrySchedule; a 413 (or a payload too large to encrypt) is
// sent again once, shortened to the title and the link.
package push

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/webhooks"
)

// VAPID is the application server's key pair and contact.
type VAPID struct {
	// PublicKey and PrivateKey are base64url without padding: the
	// uncompressed P-256 point and the 32-byte scalar.
	PublicKey, PrivateKey string
	// Subject is the mailto: or https: contact the push service may use.
	Subject string
}

// ParseVAPID checks COURIER_VAPID_PUBLIC_KEY, COURIER_VAPID_PRIVATE_KEY and
// COURIER_VAPID_SUBJECT: a P-256 pair whose halves match, and a mailto: or
// https: subject. Its errors never repeat the private key.
func ParseVAPID(public, private, subject string) (VAPID, error) {
	priv, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(private, "="))
	if err != nil || len(priv) != 32 {
		return VAPID{}, errors.New("COURIER_VAPID_PRIVATE_KEY: must be base64url of a 32-byte P-256 private key")
	}
	key, err := ecdh.P256().NewPrivateKey(priv)
	if err != nil {
		return VAPID{}, errors.New("COURIER_VAPID_PRIVATE_KEY: is not a P-256 private key")
	}
	pub, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(public, "="))
	if err != nil || len(pub) != 65 {
		return VAPID{}, errors.New("COURIER_VAPID_PUBLIC_KEY: must be base64url of an uncompressed P-256 point (65 bytes)")
	}
	if string(key.PublicKey().Bytes()) != string(pub) {
		return VAPID{}, errors.New("COURIER_VAPID_PUBLIC_KEY: is not the public half of COURIER_VAPID_PRIVATE_KEY")
	}
	switch {
	case strings.HasPrefix(subject, "mailto:"):
		if a, err := mail.ParseAddress(strings.TrimPrefix(subject, "mailto:")); err != nil || a.Name != "" {
			return VAPID{}, fmt.Errorf("COURIER_VAPID_SUBJECT: %q is not a mailto: address", subject)
		}
	case strings.HasPrefix(subject, "https:"):
		if u, err := url.Parse(subject); err != nil || u.Host == "" {
			return VAPID{}, fmt.Errorf("COURIER_VAPID_SUBJECT: %q is not an https: URL", subject)
		}
	case subject == "":
		return VAPID{}, errors.New("COURIER_VAPID_SUBJECT: is required with a VAPID key pair (a mailto: or https: contact)")
	default:
		return VAPID{}, fmt.Errorf("COURIER_VAPID_SUBJECT: must be a mailto: or https: contact, got %q", subject)
	}
	return VAPID{PublicKey: base64.RawURLEncoding.EncodeToString(pub), PrivateKey: base64.RawURLEncoding.EncodeToString(priv), Subject: subject}, nil
}

// GenerateVAPID makes a new key pair (platform dev makes one once).
func GenerateVAPID(subject string) (VAPID, error) {
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return VAPID{}, err
	}
	return VAPID{PublicKey: pub, PrivateKey: priv, Subject: subject}, nil
}

// TTL is how long a push service keeps a notification for a browser that
// is offline (the TTL header, in seconds).
const TTL = 24 * 60 * 60

// Payload is what the service worker receives, decrypted: the message's
// subject as the title, its plain text as the body, and its link. The
// short form (after a 413) has the title and the link only.
type Payload struct {
	ID       string `json:"id"`
	Template string `json:"template"`
	Title    string `json:"title"`
	Body     string `json:"body,omitempty"`
	Link     string `json:"link,omitempty"`
}

// Options tune the push loop.
type Options struct {
	// Batch is how many pushes one claim takes (default 50); Workers how
	// many are in flight (default webhooks.DefaultWorkers).
	Batch, Workers int
	Lease          time.Duration // default 1m
	Poll           time.Duration // default 500ms
	// Schedule is the retry schedule (default courier.RetrySchedule).
	Schedule []time.Duration
	Now      func() time.Time
}

// Sender is the push loop.
type Sender struct {
	store    courier.PushStore
	svc      *courier.Service
	push     *courier.Push
	renderer *courier.Renderer
	vapid    VAPID
	client   *http.Client
	opts     Options
	logger   *slog.Logger
	kick     chan struct{}
}

// NewSender returns a push loop over store, rendering with renderer and
// posting through client (webhooks.NewClientWith: public addresses only).
func NewSender(store courier.PushStore, svc *courier.Service, push *courier.Push, renderer *courier.Renderer, vapid VAPID,
	client *http.Client, opts Options, logger *slog.Logger) *Sender {
	if opts.Batch <= 0 {
		opts.Batch = 50
	}
	if opts.Workers <= 0 {
		opts.Workers = webhooks.DefaultWorkers
	}
	if opts.Lease <= 0 {
		opts.Lease = time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.Schedule == nil {
		opts.Schedule = courier.RetrySchedule
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Sender{store: store, svc: svc, push: push, renderer: renderer, vapid: vapid, client: client, opts: opts, logger: logger,
		kick: make(chan struct{}, 1)}
}

// Kick wakes the loop: pushes were queued.
func (s *Sender) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run pushes until ctx is done, as a courier.Pipeline.
func (s *Sender) Run(ctx context.Context) { s.pipeline().Run(ctx) }

// SendDue claims one batch of due pushes, sends each once and records
// the outcomes: one turn of the loop, for tests.
func (s *Sender) SendDue(ctx context.Context) (int, error) { return s.pipeline().Once(ctx) }

func (s *Sender) pipeline() courier.Pipeline[courier.ClaimedPush, courier.PushOutcome] {
	return courier.Pipeline[courier.ClaimedPush, courier.PushOutcome]{
		Batch: s.opts.Batch, Workers: s.opts.Workers, Poll: s.opts.Poll, BusyPoll: courier.BusyPoll, Gather: courier.RecordGather, Wake: s.kick,
		Claim: func(ctx context.Context, limit int) ([]courier.ClaimedPush, error) {
			return s.store.ClaimPushes(ctx, limit, s.opts.Lease)
		},
		Work: func(ctx context.Context, c courier.ClaimedPush) (courier.PushOutcome, bool) {
			return s.attempt(ctx, c), true
		},
		Record: s.record,
		Logger: s.logger, What: "push",
	}
}

func (s *Sender) record(ctx context.Context, outcomes []courier.PushOutcome) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.store.RecordPushes(rctx, outcomes); err != nil {
		s.logger.Error("push: recording the outcomes failed; they are sent again when their leases end", "err", err.Error(), "pushes", len(outcomes))
	}
}

// errTooLarge is a payload the push service (413) or the encryption
// (more than one 4096-byte record) refused for its size.
var errTooLarge = errors.New("the payload is too large")

// attempt makes one push: the full payload, then (after a 413) the short
// one, once.
func (s *Sender) attempt(ctx context.Context, c courier.ClaimedPush) courier.PushOutcome {
	out := courier.PushOutcome{Push: c}
	full, short, err := s.payloads(c)
	if err != nil {
		s.logger.Error("push: the notification cannot be built (was COURIER_SECRET_BOX_KEY changed?)", "push_id", c.ID, "err", err.Error())
		out.Status, out.Detail = courier.PushFailed, "the notification could not be built"
		return out
	}
	auth, err := s.push.OpenAuth(c)
	if err != nil {
		s.logger.Error("push: the subscription's auth secret does not open", "push_id", c.ID, "err", err.Error())
		out.Status, out.Detail = courier.PushFailed, "the subscription's keys could not be opened"
		return out
	}
	status, err := s.post(ctx, c, auth, full)
	shortened := false
	if errors.Is(err, errTooLarge) {
		shortened = true
		status, err = s.post(ctx, c, auth, short)
	}
	note := ""
	if shortened {
		note = " (shortened to its title and link after a 413)"
	}
	switch {
	case err == nil && status >= 200 && status < 300:
		out.Status, out.Detail = courier.PushDelivered, "the push service answered "+strconv.Itoa(status)+note
	case err == nil && (status == http.StatusNotFound || status == http.StatusGone):
		out.Status, out.Detail = courier.PushExpired, "the push service answered "+strconv.Itoa(status)+"; the subscription was deleted"
	case errors.Is(err, errTooLarge):
		out.Status, out.Detail = courier.PushFailed, "the push service refused even the shortened notification as too large"
	case err == nil && status != http.StatusTooManyRequests && status < 500:
		out.Status, out.Detail = courier.PushFailed, "the push service answered "+strconv.Itoa(status)+note
	default:
		detail := "the push service answered " + strconv.Itoa(status) + note
		if err != nil {
			_, detail = webhooks.Classify(err, s.client.Timeout)
			s.logger.Info("push: attempt failed", "push_id", c.ID, "attempt", c.Attempts, "err", err.Error())
		}
		out.Status, out.Detail = courier.PushFailed, detail
		if c.Attempts <= len(s.opts.Schedule) {
			next := s.opts.Now().Add(s.opts.Schedule[c.Attempts-1])
			out.Status, out.Next = courier.PushQueued, &next
		}
	}
	return out
}

// payloads renders the claimed push's message into its full and short
// payloads.
func (s *Sender) payloads(c courier.ClaimedPush) (full, short []byte, err error) {
	data, err := s.svc.OpenPushData(c)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.renderer.Render(c.Template, data)
	if err != nil {
		return nil, nil, err
	}
	p := Payload{ID: c.ID, Template: c.Template, Title: r.Subject, Body: strings.TrimSpace(r.Text), Link: data["link"]}
	if full, err = json.Marshal(p); err != nil {
		return nil, nil, err
	}
	p.Body = ""
	short, err = json.Marshal(p)
	return full, short, err
}

// post sends one encrypted payload and returns the push service's status;
// a 413, or a payload that does not fit one record, is errTooLarge.
func (s *Sender) post(ctx context.Context, c courier.ClaimedPush, auth, payload []byte) (int, error) {
	sub := &webpush.Subscription{Endpoint: c.Endpoint, Keys: webpush.Keys{
		P256dh: c.P256dh, Auth: base64.RawURLEncoding.EncodeToString(auth)}}
	res, err := webpush.SendNotificationWithContext(ctx, payload, sub, &webpush.Options{
		HTTPClient: s.client, Subscriber: strings.TrimPrefix(s.vapid.Subject, "mailto:"), TTL: TTL, Urgency: webpush.UrgencyNormal,
		VAPIDPublicKey: s.vapid.PublicKey, VAPIDPrivateKey: s.vapid.PrivateKey,
	})
	if errors.Is(err, webpush.ErrMaxPadExceeded) {
		return 0, errTooLarge
	}
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode == http.StatusRequestEntityTooLarge {
		return res.StatusCode, errTooLarge
	}
	return res.StatusCode, nil
}
