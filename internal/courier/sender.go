package courier

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Message is a rendered message ready for a Mailer.
type Message struct {
	// ID is the email's id; AttemptID is this attempt's, carried in the
	// X-Courier-Attempt header so a receiver can tell attempts apart.
	ID, AttemptID string
	From, To      string
	Subject       string
	Text, HTML    string
	CreatedAt     time.Time
}

// Mailer hands one message to a mail system. A *DeliveryError with
// Permanent set is a refusal that no retry mends (an SMTP 5xx at RCPT or
// DATA), a bounce unless Unsupported is set too; any other error is
// temporary.
type Mailer interface {
	Deliver(ctx context.Context, m Message) error
}

// DeliveryError is a mail system's answer to one delivery.
type DeliveryError struct {
	Permanent bool
	// Unsupported, with Permanent, is a message the mail system cannot
	// carry at all (an address outside ASCII for an SMTP server without
	// SMTPUTF8): nothing was sent and no one refused the address, so the
	// message fails without a bounce and the address is not suppressed.
	Unsupported bool
	Detail      string
}

func (e *DeliveryError) Error() string { return e.Detail }

// SenderOptions tune the send loop. Zero fields take the defaults shown.
type SenderOptions struct {
	// From is the From header (COURIER_MAIL_FROM).
	From string
	// Batch is how many messages one claim takes (default 50), Workers how
	// many are delivered at once (default 32). Each delivery is about five
	// exchanges over a kept SMTP session, so the rate is Workers over their
	// time (Little's law); 32 sessions stay under the usual per-client
	// limit of a relay (Postfix's default is 50), and with 16
	// the send loop, not the SMTP server, bounded the rate on PostgreSQL
	// (bench email: 755 against 1,073 delivered/s).
	Batch, Workers int
	// Lease is how long a claimed message stays this attempt's (default
	// 2m): longer than any delivery may take, since a message whose lease
	// ends is claimed again under a new attempt id.
	Lease time.Duration
	// Poll is the pause when nothing was due (default 500ms).
	Poll time.Duration
	// RetryBase and RetryMax shape the back-off after a temporary failure:
	// RetryBase·2^(attempts-1), at most RetryMax, with up to half of it
	// taken off at random (defaults 10s and 1h).
	RetryBase, RetryMax time.Duration
	// GiveUpAfter is how long after its creation a message that still
	// fails temporarily is given up as failed (default 24h).
	GiveUpAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o SenderOptions) withDefaults() SenderOptions {
	if o.Batch <= 0 {
		o.Batch = 50
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	if o.Lease <= 0 {
		o.Lease = 2 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 10 * time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Hour
	}
	if o.GiveUpAfter <= 0 {
		o.GiveUpAfter = 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Backoff is the wait before the next attempt after attempts failures,
// before jitter.
func (o SenderOptions) Backoff(attempts int) time.Duration {
	o = o.withDefaults()
	d := o.RetryBase
	for i := 1; i < attempts && d < o.RetryMax; i++ {
		d *= 2
	}
	return min(d, o.RetryMax)
}

// BusyPoll is the send loop's pause after a claim that found work but
// less than a batch.
const BusyPoll = 10 * time.Millisecond

// Sender is the durable send loop: it claims due messages under a lease
// and a fresh attempt id, delivers each once through the Mailer, and
// records the outcome only while that attempt still holds the lease. A
// process that dies mid-delivery leaves the message queued; when the lease
// ends it is claimed again under a new attempt id, so the mail system sees
// a message at least once and never twice within one attempt.
type Sender struct {
	svc      *Service
	store    Store
	mailer   Mailer
	renderer *Renderer
	opts     SenderOptions
	logger   *slog.Logger
}

// NewSender returns a send loop over svc's store.
func NewSender(svc *Service, renderer *Renderer, mailer Mailer, opts SenderOptions, logger *slog.Logger) *Sender {
	return &Sender{svc: svc, store: svc.store, mailer: mailer, renderer: renderer, opts: opts.withDefaults(), logger: logger}
}

// Run sends until ctx is done, as a Pipeline: the next batch is claimed
// while the current one is delivered, acceptances are recorded as they
// come (in one transaction for as many as come within RecordGather), and
// a message the service queues wakes the loop at once. A database error
// is logged and retried.
func (s *Sender) Run(ctx context.Context) { s.pipeline().Run(ctx) }

// SendDue claims one batch of due messages and delivers it; it returns
// how many it claimed: one turn of the loop, for tests and tools that
// drive it by hand.
func (s *Sender) SendDue(ctx context.Context) (int, error) { return s.pipeline().Once(ctx) }

func (s *Sender) pipeline() Pipeline[Claimed, Attempt] {
	return Pipeline[Claimed, Attempt]{
		Batch: s.opts.Batch, Workers: s.opts.Workers, Poll: s.opts.Poll, BusyPoll: BusyPoll, Gather: RecordGather, Wake: s.svc.queued,
		Claim: func(ctx context.Context, limit int) ([]Claimed, error) {
			return s.store.ClaimDue(ctx, limit, s.opts.Lease)
		},
		Work: func(ctx context.Context, c Claimed) (Attempt, bool) {
			return Attempt{ID: c.ID, AttemptID: c.AttemptID}, s.deliver(ctx, c)
		},
		Record: s.recordDelivered,
		Logger: s.logger, What: "send loop",
	}
}

// recordDelivered records the batch's accepted messages in one
// transaction (a transaction each held the send loop to what SQLite's
// one writer commits). Should it fail, or the process die before it, the
// leases end and those messages go out again under new attempt ids: at
// least once, as always.
func (s *Sender) recordDelivered(ctx context.Context, done []Attempt) {
	if len(done) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ok, err := s.store.DeliveredAll(ctx, done)
	if err != nil {
		s.logger.Error("send loop: recording the deliveries failed", "err", err.Error(), "messages", len(done))
		return
	}
	for i, held := range ok {
		if !held {
			s.logger.Warn("send loop: the attempt lost its lease before its outcome was recorded", "email_id", done[i].ID, "attempt_id", done[i].AttemptID)
		}
	}
}

// deliver makes the one delivery of attempt c.AttemptID and records it,
// except an acceptance, which it reports for the pipeline to record with
// others. Outcomes are recorded on a context that outlives ctx's
// cancellation, so a stopping process does not drop an answer the mail
// system gave.
func (s *Sender) deliver(ctx context.Context, c Claimed) (accepted bool) {
	log := s.logger.With("email_id", c.ID, "attempt_id", c.AttemptID)
	data, err := s.svc.OpenData(c)
	if err != nil {
		log.Error("send loop: template data does not open (was COURIER_SECRET_BOX_KEY changed?)", "err", err.Error())
		s.record(ctx, log, func(ctx context.Context) (bool, error) {
			return s.store.Failed(ctx, c.ID, c.AttemptID, "template data could not be opened")
		})
		return
	}
	r, err := s.renderer.Render(c.Template, data)
	if err != nil {
		log.Error("send loop: render failed", "err", err.Error())
		s.record(ctx, log, func(ctx context.Context) (bool, error) {
			return s.store.Failed(ctx, c.ID, c.AttemptID, "the message could not be rendered")
		})
		return
	}
	err = s.mailer.Deliver(ctx, Message{ID: c.ID, AttemptID: c.AttemptID, From: s.opts.From, To: c.To,
		Subject: r.Subject, Text: r.Text, HTML: r.HTML, CreatedAt: c.CreatedAt})
	var de *DeliveryError
	switch {
	case err == nil:
		return true
	case errors.As(err, &de) && de.Permanent && de.Unsupported:
		log.Warn("send loop: the mail system cannot carry the message", "detail", de.Detail)
		s.record(ctx, log, func(ctx context.Context) (bool, error) { return s.store.Failed(ctx, c.ID, c.AttemptID, de.Detail) })
	case errors.As(err, &de) && de.Permanent:
		log.Info("send loop: refused permanently", "detail", de.Detail)
		s.record(ctx, log, func(ctx context.Context) (bool, error) { return s.store.Bounced(ctx, c.ID, c.AttemptID, de.Detail) })
	default:
		detail := err.Error()
		now := s.opts.Now()
		next := now.Add(s.jittered(c.Attempts))
		if next.Sub(c.CreatedAt) > s.opts.GiveUpAfter {
			log.Warn("send loop: giving up", "detail", detail)
			s.record(ctx, log, func(ctx context.Context) (bool, error) { return s.store.Failed(ctx, c.ID, c.AttemptID, detail) })
			return
		}
		log.Info("send loop: temporary failure", "detail", detail, "next_attempt_at", next)
		s.record(ctx, log, func(ctx context.Context) (bool, error) { return s.store.Retry(ctx, c.ID, c.AttemptID, detail, next) })
	}
	return false
}

func (s *Sender) jittered(attempts int) time.Duration {
	d := s.opts.Backoff(attempts)
	return d - time.Duration(rand.Int64N(int64(d)/2+1))
}

func (s *Sender) record(ctx context.Context, log *slog.Logger, fn func(ctx context.Context) (bool, error)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ok, err := fn(ctx)
	switch {
	case err != nil:
		// The lease will end and the message be tried again.
		log.Error("send loop: recording the outcome failed", "err", err.Error())
	case !ok:
		log.Warn("send loop: the attempt lost its lease before its outcome was recorded")
	}
}
