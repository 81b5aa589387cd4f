// Package mailrelay hands identity's queued mail to courier
// (courier.md section 5): each request goes to POST /v1/emails with
// identity's service credential and the request's id as Idempotency-Key,
// so a retry after a lost answer never sends twice; on acceptance the
// sealed data is erased. A courier outage delays mail and loses none.
package mailrelay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/identity"
)

// Store is the mail outbox.
type Store interface {
	PendingMail(ctx context.Context, limit int) ([]identity.OutgoingMail, error)
	MailSent(ctx context.Context, id string) error
	MailRetry(ctx context.Context, id string, next time.Time, reason string) error
}

// Relay delivers the outbox to courier.
type Relay struct {
	Store  Store
	Sealer *identity.MailSealer
	// URL is courier's base address (IDENTITY_COURIER_URL); Token is the
	// service credential, "identity:<secret>" (IDENTITY_COURIER_TOKEN).
	URL    string
	Token  string
	Client *http.Client
	Logger *slog.Logger
	Now    func() time.Time
}

// Back-off bounds between attempts at one mail.
const (
	minBackoff = time.Second
	maxBackoff = 5 * time.Minute
	batch      = 50
)

// Run relays until ctx ends, looking for due mail every interval.
func (r *Relay) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := r.Once(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Warn("mail relay: reading the outbox failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once hands every due mail to courier and returns how many courier took.
func (r *Relay) Once(ctx context.Context) (int, error) {
	mails, err := r.Store.PendingMail(ctx, batch)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, m := range mails {
		err := r.send(ctx, m)
		if err == nil {
			if err := r.Store.MailSent(ctx, m.ID); err != nil {
				return sent, err
			}
			sent++
			continue
		}
		if ctx.Err() != nil {
			return sent, ctx.Err()
		}
		next := r.now().Add(backoff(m.Attempts))
		r.Logger.Warn("mail relay: courier did not take a mail; retrying later", "mail_id", m.ID, "template", m.Template, "attempts", m.Attempts+1, "next_attempt_at", next, "err", err)
		if err := r.Store.MailRetry(ctx, m.ID, next, err.Error()); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

func (r *Relay) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// backoff doubles from a second up to five minutes, with jitter so a
// courier coming back is not met by every mail at once.
func backoff(attempts int) time.Duration {
	d := minBackoff << min(attempts, 16)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// send posts one mail. Errors never carry the template data (it holds
// one-time links).
func (r *Relay) send(ctx context.Context, m identity.OutgoingMail) error {
	data, err := r.Sealer.Open(m)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"template": m.Template, "to": m.To, "data": data})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.URL, "/")+"/v1/emails", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Idempotency-Key", m.ID)
	client := r.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("courier unreachable: %w", err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode == http.StatusAccepted || res.StatusCode == http.StatusOK {
		return nil
	}
	return fmt.Errorf("courier answered %d: %s", res.StatusCode, bytes.TrimSpace(answer))
}
