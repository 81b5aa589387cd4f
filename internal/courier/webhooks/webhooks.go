// Package webhooks delivers the platform's events to accounts' webhook
// endpoints: a stream consumer (the consumer library, deduplicating on the
// envelope id) turns each matching event into one pending delivery per
// endpoint, and a delivery loop POSTs them, signed by the Standard
// Webhooks scheme, retrying on courier.RetrySchedule. Deliveries to one
// endpoint keep the stream's order per subject: a later event waits until
// the earlier one is delivered or finally fails (the store's claim holds
// the order, across restarts and replicas). Outbound connections
// go only to public addresses (outside development), checked on the
// address each connection actually reaches, so DNS cannot steer them.
package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/sqldb"
)

// ConsumerName is the durable consumer's name: every courier replica
// shares it, so the stream hands each event to one of them.
const ConsumerName = "courier-webhooks"

// Timeout is how long an endpoint has to answer 2xx.
const Timeout = 10 * time.Second

// NewConsumer returns the stream consumer that enqueues deliveries;
// committed (may be nil) is called after each commit that enqueued, to
// wake the delivery loop.
func NewConsumer(ctx context.Context, db *sqldb.DB, js jetstream.JetStream, committed func(), logger *slog.Logger) (*consumer.Consumer, error) {
	return consumer.New(ctx, db, js, consumer.Config{Name: ConsumerName, Types: courier.AccountEventTypes(), Committed: committed}, sqlstore.Enqueue, logger)
}

// Consume connects to eventsURL and runs the consumer until ctx is done
// (ConsumeFrom), calling committed (may be nil) after each commit.
func Consume(ctx context.Context, db *sqldb.DB, eventsURL string, committed func(), logger *slog.Logger) error {
	nc, err := events.Connect(eventsURL, "platform-courier-webhooks", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	return ConsumeFrom(ctx, db, js, committed, logger)
}

// LeaseTTL is how long the consumer lease lasts unrenewed, and
// LeaseRenew how often its holder renews it (and another replica asks
// for it).
const (
	LeaseTTL   = 15 * time.Second
	LeaseRenew = 3 * time.Second
)

// ConsumeFrom runs the consumer on js until ctx is done, while this
// replica holds the consumer lease: one replica consumes at a time, so
// deliveries are enqueued in the stream's order (two replicas consuming
// together commit their batches in either order, and could enqueue an
// event after a later one about its subject was delivered). The others
// wait, asking every LeaseRenew, and take over within LeaseTTL of a
// holder that stops; a holder that cannot renew stops consuming after
// the batch in hand. Only a holder stalled past LeaseTTL in the middle of
// a batch can still overlap its successor. One copy is enough for the
// load: the library applies a batch of events per transaction. A broker
// or a database that is down is waited for: events wait in the stream,
// nothing is lost.
func ConsumeFrom(ctx context.Context, db *sqldb.DB, js jetstream.JetStream, committed func(), logger *slog.Logger) error {
	store := sqlstore.New(db)
	holder := uuid.NewString()
	for ctx.Err() == nil {
		held, err := store.HoldConsumerLease(ctx, ConsumerName, holder, LeaseTTL)
		if err != nil && ctx.Err() == nil {
			logger.Warn("webhooks: cannot take the consumer lease; retrying", "err", err.Error())
		}
		if held {
			consumeHeld(ctx, store, holder, db, js, committed, logger)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := store.ReleaseConsumerLease(rctx, ConsumerName, holder); err != nil {
				logger.Warn("webhooks: cannot release the consumer lease; it expires", "err", err.Error())
			}
			cancel()
			continue
		}
		sleep(ctx, LeaseRenew)
	}
	return nil
}

// consumeHeld runs the consumer while the lease is renewed, and returns
// once it has stopped: ctx done, or a renewal that failed.
func consumeHeld(ctx context.Context, store *sqlstore.Store, holder string, db *sqldb.DB, js jetstream.JetStream, committed func(), logger *slog.Logger) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runConsumer(runCtx, db, js, committed, logger)
	}()
	t := time.NewTicker(LeaseRenew)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			held, err := store.HoldConsumerLease(runCtx, ConsumerName, holder, LeaseTTL)
			if err != nil || !held {
				if ctx.Err() == nil {
					logger.Warn("webhooks: the consumer lease could not be renewed; consuming stops", "held", held, "err", fmt.Sprint(err))
				}
				stop()
				<-done
				return
			}
		}
	}
}

// runConsumer creates the consumer, waiting for a broker that is down,
// and runs it until ctx is done.
func runConsumer(ctx context.Context, db *sqldb.DB, js jetstream.JetStream, committed func(), logger *slog.Logger) {
	wait := time.Second
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := NewConsumer(cctx, db, js, committed, logger)
		cancel()
		if err == nil {
			_ = c.Run(ctx)
			return
		}
		logger.Warn("webhooks: cannot reach the event stream yet; retrying", "err", err.Error())
		sleep(ctx, wait)
		wait = min(wait*2, 30*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Sign returns the Standard Webhooks signature header value for body:
// v1,<base64 HMAC-SHA256 over "id.timestamp.body"> keyed with the
// secret's base64 part.
func Sign(secret, id string, ts int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// ErrAddressRefused is a connection to an address endpoints may not reach.
var ErrAddressRefused = errors.New("the endpoint's address is not a public one")

// guard admits a connection to address (the resolved ip:port a dial is
// about to reach) when it is courier.PublicAddress, or loopback in
// development; anything else is ErrAddressRefused.
func guard(address string, development bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return ErrAddressRefused
	}
	ip := ap.Addr()
	if courier.PublicAddress(ip) || (development && ip.Unmap().IsLoopback()) {
		return nil
	}
	return ErrAddressRefused
}

// ClientOptions configure the delivery client.
type ClientOptions struct {
	// Development admits loopback addresses (COURIER_ENV=development).
	Development bool
	// Timeout is how long an endpoint has to answer (default Timeout).
	Timeout time.Duration
	// Resolver resolves endpoint host names (default the system's). The
	// guard checks the address a connection reaches, whatever resolved it.
	Resolver *net.Resolver
	// RootCAs are the authorities certificates are checked against
	// (default the system's): a test's own server's.
	RootCAs *x509.CertPool
}

// NewClient returns the HTTP client deliveries use: no proxy, no
// redirects followed (a 3xx is a failed attempt), Timeout per request,
// and a dialer that refuses non-public addresses unless development (which
// admits loopback only).
func NewClient(development bool) *http.Client {
	return NewClientWith(ClientOptions{Development: development})
}

// NewClientWith is NewClient as o says.
func NewClientWith(o ClientOptions) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = Timeout
	}
	development := o.Development
	dialer := &net.Dialer{Timeout: 5 * time.Second, Resolver: o.Resolver, Control: func(_, address string, _ syscall.RawConn) error {
		return guard(address, development)
	}}
	return &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			TLSClientConfig:       &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
			ResponseHeaderTimeout: o.Timeout,
			MaxIdleConnsPerHost:   DefaultWorkers,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// BusyPoll is the pause of the delivery loop and the send loop after a
// claim that found work but less than a batch.
const BusyPoll = courier.BusyPoll

// DefaultWorkers is how many deliveries one process has in flight at
// most, and how many idle connections it keeps per endpoint host. By
// Little's law the in-flight count bounds the rate at count ÷ latency:
// 32 sustain thousands of deliveries/s to receivers answering in a few
// milliseconds and still 3,200/s at 10 ms, as many as the closed-loop
// clients of the bench's bare POST loop. One endpoint sees at most one
// request per subject at a time (the order rule), so the concurrency is
// across subjects and endpoints. With 8
// (one batch's posts at a time) the loop waited on its own claims and
// records; 16 and 32 measured 2,587 and 3,241 deliveries/s on SQLite.
const DefaultWorkers = 32

// Options tune the delivery loop.
type Options struct {
	// Batch is how many deliveries one claim takes and one transaction
	// records at most (default 50); Workers how many are in flight at
	// once (default DefaultWorkers).
	Batch, Workers int
	Lease          time.Duration // default 1m (longer than Timeout)
	Poll           time.Duration // default 500ms
	// Schedule is the retry schedule (default courier.RetrySchedule).
	Schedule []time.Duration
	Now      func() time.Time
}

// Deliverer is the delivery loop.
type Deliverer struct {
	store  courier.WebhookStore
	hooks  *courier.Webhooks
	client *http.Client
	opts   Options
	logger *slog.Logger
	kick   chan struct{}
}

// Kick wakes the loop now: new deliveries were committed (the consumer),
// or a manual retry is due at once.
func (d *Deliverer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// NewDeliverer returns a delivery loop over store.
func NewDeliverer(store courier.WebhookStore, hooks *courier.Webhooks, client *http.Client, opts Options, logger *slog.Logger) *Deliverer {
	if opts.Batch <= 0 {
		opts.Batch = 50
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
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
	return &Deliverer{store: store, hooks: hooks, client: client, opts: opts, logger: logger, kick: make(chan struct{}, 1)}
}

// Run delivers until ctx is done, as a courier.Pipeline: the next batch
// is claimed while the current one is posted, and outcomes are recorded
// as they finish.
func (d *Deliverer) Run(ctx context.Context) { d.pipeline().Run(ctx) }

// DeliverDue claims one batch of due deliveries, attempts each once, and
// records the batch's outcomes in one transaction: one turn of the loop,
// for tests and tools that drive it by hand. A process that dies before
// that commit leaves the batch to be claimed again when its lease ends:
// the receivers may then see an event twice (with one webhook-id), never
// not at all.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) { return d.pipeline().Once(ctx) }

func (d *Deliverer) pipeline() courier.Pipeline[courier.ClaimedDelivery, courier.AttemptOutcome] {
	return courier.Pipeline[courier.ClaimedDelivery, courier.AttemptOutcome]{
		Batch: d.opts.Batch, Workers: d.opts.Workers, Poll: d.opts.Poll, BusyPoll: BusyPoll, Gather: courier.RecordGather, Wake: d.kick,
		Claim: func(ctx context.Context, limit int) ([]courier.ClaimedDelivery, error) {
			return d.store.ClaimDeliveries(ctx, limit, d.opts.Lease)
		},
		Work: func(ctx context.Context, c courier.ClaimedDelivery) (courier.AttemptOutcome, bool) {
			return d.attempt(ctx, c), true
		},
		Record: d.record,
		Logger: d.logger, What: "webhooks",
	}
}

// record records outcomes in one transaction, on a context that outlives
// ctx's cancellation, so a stopping process keeps the answers it got.
// A delivery that settled lets the next of its queue go, so the loop
// looks for it at once rather than after its pause.
func (d *Deliverer) record(ctx context.Context, outcomes []courier.AttemptOutcome) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.store.RecordAttempts(rctx, outcomes); err != nil {
		d.logger.Error("webhooks: recording the attempts failed; they are made again when their leases end", "err", err.Error(), "attempts", len(outcomes))
		return
	}
	d.Kick()
}

func (d *Deliverer) attempt(ctx context.Context, c courier.ClaimedDelivery) courier.AttemptOutcome {
	a, ok, cause := d.post(ctx, c)
	var next *time.Time
	if !ok && c.Attempts <= len(d.opts.Schedule) {
		t := d.opts.Now().Add(d.opts.Schedule[c.Attempts-1])
		next = &t
	}
	if !ok {
		attrs := []any{"delivery_id", c.ID, "endpoint_id", c.EndpointID, "event_id", c.EventID,
			"status", a.StatusCode, "category", a.ErrorCategory, "attempt", c.Attempts, "retry", next != nil}
		if cause != nil {
			// The raw error stays in the service's log; the delivery log
			// shows the admins its category and a safe message.
			attrs = append(attrs, "err", cause.Error())
		}
		d.logger.Info("webhooks: attempt failed", attrs...)
	}
	return courier.AttemptOutcome{Delivery: c, Attempt: a, OK: ok, Next: next}
}

// post makes one signed POST of the envelope. A failure comes with its
// cause, for the service's log only.
func (d *Deliverer) post(ctx context.Context, c courier.ClaimedDelivery) (courier.DeliveryAttempt, bool, error) {
	a := courier.DeliveryAttempt{At: d.opts.Now()}
	internal := func(err error) (courier.DeliveryAttempt, bool, error) {
		a.ErrorCategory, a.Error = courier.AttemptInternal, "courier could not sign the request"
		return a, false, err
	}
	secret, err := d.hooks.OpenSecret(c)
	if err != nil {
		return internal(err)
	}
	ts := d.opts.Now().Unix()
	sig, err := Sign(secret, c.EventID, ts, c.Body)
	if err != nil {
		return internal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		a.ErrorCategory, a.Error = courier.AttemptConnection, "the endpoint's URL cannot be requested"
		return a, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "platform-courier-webhooks/1")
	req.Header.Set("webhook-id", c.EventID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	res, err := d.client.Do(req)
	a.Latency = time.Since(start)
	if err != nil {
		a.ErrorCategory, a.Error = Classify(err, d.client.Timeout)
		return a, false, err
	}
	defer res.Body.Close()
	// The first 1 KiB, without a character cut in half (or any invalid
	// byte), so the log stays text.
	excerpt, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	a.StatusCode, a.Response = res.StatusCode, strings.ToValidUTF8(string(excerpt), "")
	if res.StatusCode < 200 || res.StatusCode > 299 {
		a.ErrorCategory, a.Error = courier.AttemptHTTPStatus, "the endpoint answered "+strconv.Itoa(res.StatusCode)+", not 2xx"
		if res.StatusCode >= 300 && res.StatusCode < 400 {
			a.Error += " (redirects are not followed)"
		}
		return a, false, nil
	}
	return a, true, nil
}

// Classify returns the category of a request's failure and a message an
// account's admins may read: what kind of failure, never the error's
// text, which can carry the platform's resolver, its addresses, or
// whether an internal name resolves. timeout is the client's.
func Classify(err error, timeout time.Duration) (category, message string) {
	var (
		dnsErr    *net.DNSError
		verifyErr *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		netErr    net.Error
	)
	switch {
	case errors.Is(err, ErrAddressRefused):
		return courier.AttemptBlockedAddress, "the endpoint's host is at an address that is not public; no connection was made"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return courier.AttemptDNS, "the endpoint's host name does not resolve"
		}
		return courier.AttemptDNS, "the endpoint's host name could not be resolved"
	case errors.As(err, &unknownCA):
		return courier.AttemptTLS, "the endpoint's certificate is not signed by a trusted authority"
	case errors.As(err, &hostErr):
		return courier.AttemptTLS, "the endpoint's certificate does not name its host"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return courier.AttemptTLS, "the endpoint's certificate has expired or is not yet valid"
	case errors.As(err, &verifyErr), errors.As(err, &invalid):
		return courier.AttemptTLS, "the endpoint's certificate is not valid"
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http turns a record header of "HTTP/" into an error of its
		// own, with no type to match.
		return courier.AttemptTLS, "the endpoint did not answer in TLS"
	case errors.As(err, &alert):
		return courier.AttemptTLS, "the endpoint ended the TLS handshake"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return courier.AttemptTimeout, "no answer within " + timeout.String()
	case errors.Is(err, syscall.ECONNREFUSED):
		return courier.AttemptRefused, "the endpoint's host refused the connection"
	}
	return courier.AttemptConnection, "the connection failed before an answer came"
}
