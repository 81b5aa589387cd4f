package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Courier's templates billing sends (billing.md §7).
const (
	TemplatePaymentReceipt = "payment_receipt"
	TemplatePaymentFailed  = "payment_failed"
)

// Mail is a message owed to a payer, queued in the same transaction as
// the payment it is about and handed to courier by MailRelay. Data holds
// everything but the link, which the relay makes from the account id and
// the public URL.
type Mail struct {
	ID        string
	Template  string
	To        string
	AccountID string
	Data      map[string]string
	Attempts  int
}

// zeroDecimal are ISO 4217 currencies without minor units that Stripe
// takes as whole amounts.
var zeroDecimal = map[string]bool{"bif": true, "clp": true, "djf": true, "gnf": true, "jpy": true, "kmf": true, "krw": true,
	"mga": true, "pyg": true, "rwf": true, "ugx": true, "vnd": true, "vuv": true, "xaf": true, "xof": true, "xpf": true}

// FormatAmount writes an amount of minor units for a person: "120.00 USD",
// "500 JPY".
func FormatAmount(amount int64, currency string) string {
	cur := strings.ToUpper(currency)
	if zeroDecimal[currency] {
		return strconv.FormatInt(amount, 10) + " " + cur
	}
	sign := ""
	if amount < 0 {
		sign, amount = "-", -amount
	}
	return fmt.Sprintf("%s%d.%02d %s", sign, amount/100, amount%100, cur)
}

// receipt is the payment_receipt owed for p; ok is false without an
// address to send it to.
func receipt(p Payment, item string) (Mail, bool) {
	if p.Email == "" || p.AccountID == "" {
		return Mail{}, false
	}
	return Mail{Template: TemplatePaymentReceipt, To: p.Email, AccountID: p.AccountID, Data: map[string]string{
		"amount": FormatAmount(p.Amount, p.Currency), "item": item, "reference": p.ProcessorPaymentID}}, true
}

// MailStore is the mail outbox.
type MailStore interface {
	// PendingMail claims up to limit mails due now.
	PendingMail(ctx context.Context, limit int) ([]Mail, error)
	// MailDone records an attempt: sent when failure is "", else retried
	// at next, or given up when final.
	MailDone(ctx context.Context, id, failure string, next time.Time, final bool) error
}

// MailRelay hands queued mail to courier's POST /v1/emails with billing's
// service credential and the mail's id as Idempotency-Key, so a retry
// after a lost answer never sends twice. A courier outage delays receipts
// and loses none.
type MailRelay struct {
	Store MailStore
	// URL is courier's base address; Token is "billing:<secret>".
	URL   string
	Token string
	// PublicURL is the web app's address the mails link to.
	PublicURL string
	Client    *http.Client
	Logger    *slog.Logger
}

// Once hands every due mail to courier and returns how many it took.
func (r *MailRelay) Once(ctx context.Context) (int, error) {
	mails, err := r.Store.PendingMail(ctx, 50)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, m := range mails {
		status, err := r.send(ctx, m)
		if ctx.Err() != nil {
			return sent, ctx.Err()
		}
		failure, final := "", false
		if err != nil {
			failure = truncate(err.Error(), 500)
			// Courier refusing the request itself will refuse it again.
			final = status == http.StatusBadRequest || status == http.StatusUnprocessableEntity
			r.logger().WarnContext(ctx, "billing: courier did not take a mail", "mail_id", m.ID, "template", m.Template,
				"attempt", m.Attempts+1, "final", final, "err", failure)
		} else {
			sent++
		}
		if err := r.Store.MailDone(ctx, m.ID, failure, time.Now().Add(retryAfter(m.Attempts+1)), final); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// Run relays until ctx is done, looking every interval.
func (r *MailRelay) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := r.Once(ctx); err != nil && ctx.Err() == nil {
			r.logger().WarnContext(ctx, "billing: mail relay cannot read its outbox", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *MailRelay) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r *MailRelay) send(ctx context.Context, m Mail) (int, error) {
	if r.URL == "" {
		return 0, fmt.Errorf("no courier configured (BILLING_COURIER_URL)")
	}
	data := map[string]string{}
	for k, v := range m.Data {
		data[k] = v
	}
	data["link"] = strings.TrimRight(r.PublicURL, "/") + "/app/accounts/" + m.AccountID + "/billing"
	body, err := json.Marshal(map[string]any{"template": m.Template, "to": m.To, "data": data})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.URL, "/")+"/v1/emails", bytes.NewReader(body))
	if err != nil {
		return 0, err
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
		return 0, fmt.Errorf("courier unreachable: %w", err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode == http.StatusAccepted || res.StatusCode == http.StatusOK || res.StatusCode == http.StatusCreated {
		return res.StatusCode, nil
	}
	return res.StatusCode, fmt.Errorf("courier answered %d: %s", res.StatusCode, bytes.TrimSpace(answer))
}
