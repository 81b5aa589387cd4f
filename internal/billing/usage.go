package billing

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// TypeUsageRecorded is emitted once per accepted usage record.
const TypeUsageRecorded = "billing.usage.recorded"

// Usage limits (billing.md §6).
const (
	// MaxUsageQuantity bounds one record's quantity: a bigger figure is a
	// unit mistake, not usage.
	MaxUsageQuantity = 1_000_000_000_000
	// MaxUsageWindow is the longest window one record may cover.
	MaxUsageWindow = 31 * 24 * time.Hour
	// MaxUsageRange is the longest span one hourly read answers.
	MaxUsageRange = 93 * 24 * time.Hour
	// DefaultUsageRange is the span read when from is absent.
	DefaultUsageRange = 7 * 24 * time.Hour
)

// MetricTokens is the metric muse's token usage is recorded under.
const MetricTokens = "tokens"

// metricRE is a metric's name: the name of the processor's meter event
// for a metered plan too.
var metricRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ValidMetric reports whether m is a metric name.
func ValidMetric(m string) bool { return metricRE.MatchString(m) }

// UsageRecord is one accepted usage record: Quantity of Metric used by the
// account in [WindowStart, WindowEnd], reported by Source (the calling
// service). Its ID is the caller's, so a retry is the same record.
type UsageRecord struct {
	ID          string
	AccountID   string
	Metric      string
	Quantity    int64
	WindowStart time.Time
	WindowEnd   time.Time
	Source      string
	CreatedAt   time.Time
}

// Hour is the hour a record is summed into: its window's start, truncated.
func (u UsageRecord) Hour() time.Time { return u.WindowStart.UTC().Truncate(time.Hour) }

// same reports whether u and o are the same record as sent.
func (u UsageRecord) same(o UsageRecord) bool {
	return u.ID == o.ID && u.AccountID == o.AccountID && u.Metric == o.Metric && u.Quantity == o.Quantity &&
		u.WindowStart.Equal(o.WindowStart) && u.WindowEnd.Equal(o.WindowEnd)
}

// HourlyUsage is one hour's sum of a metric for an account.
type HourlyUsage struct {
	Metric   string
	Hour     time.Time
	Quantity int64
}

// MeterReport is a meter event owed to the processor: a usage record of an
// account whose active subscription is on a plan metering that metric.
type MeterReport struct {
	UsageID    string
	CustomerID string
	EventName  string
	Value      int64
	OccurredAt time.Time
	Attempts   int
}

// MeterEvent is a meter event as the processor takes it; Identifier (the
// usage id) makes a retry count once.
type MeterEvent struct {
	Identifier string
	EventName  string
	CustomerID string
	Value      int64
	Timestamp  time.Time
}

// UsageStore is billing's persistence of usage.
type UsageStore interface {
	// RecordUsage stores u, its hourly sum, its usage.recorded event and,
	// for an account on a plan metering u's metric, its meter report, in
	// one transaction. A record whose id is stored already is returned
	// with created false and nothing written.
	RecordUsage(ctx context.Context, u UsageRecord) (UsageRecord, bool, error)
	// HourlyUsage reads an account's hourly sums in [from, to), oldest
	// first; metric "" reads every metric.
	HourlyUsage(ctx context.Context, accountID, metric string, from, to time.Time) ([]HourlyUsage, error)
	// PendingMeterReports claims up to limit reports due now.
	PendingMeterReports(ctx context.Context, limit int) ([]MeterReport, error)
	// MeterReported records a report's attempt: sent when failure is "",
	// else retried at next.
	MeterReported(ctx context.Context, usageID, failure string, next time.Time) error
}

// UsageInput is a usage record as sent; Quantity is the JSON text, so only
// an integer literal is accepted. nil means absent.
type UsageInput struct {
	ID          *string
	AccountID   *string
	Metric      *string
	Quantity    *string
	WindowStart *string
	WindowEnd   *string
}

// Caller is a platform service authenticated by its service credential
// (BILLING_SERVICE_TOKENS).
type Caller struct{ Name string }

// NewUsage validates in as sent by source. Errors: validation_failed,
// naming each bad field.
func NewUsage(in UsageInput, source string) (UsageRecord, error) {
	var p problems
	u := UsageRecord{Source: source}
	uuid := func(field string, s *string) string {
		if s == nil || !ids.Valid(*s) {
			p.Add(field, "uuid")
			return ""
		}
		return *s
	}
	u.ID = uuid("id", in.ID)
	u.AccountID = uuid("account_id", in.AccountID)
	if in.Metric == nil || !ValidMetric(*in.Metric) {
		p.Add("metric", "metric_name")
	} else {
		u.Metric = *in.Metric
	}
	if in.Quantity == nil {
		p.Add("quantity", "required")
	} else if q, err := strconv.ParseInt(*in.Quantity, 10, 64); err != nil {
		p.Add("quantity", "integer")
	} else if q <= 0 {
		p.Add("quantity", "positive")
	} else if q > MaxUsageQuantity {
		p.Add("quantity", "too_large")
	} else {
		u.Quantity = q
	}
	at := func(field string, s *string) (time.Time, bool) {
		if s == nil {
			p.Add(field, "required")
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, *s)
		if err != nil {
			p.Add(field, "rfc3339")
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	start, okStart := at("window_start", in.WindowStart)
	end, okEnd := at("window_end", in.WindowEnd)
	if okStart && okEnd {
		switch {
		case end.Before(start):
			p.Add("window_end", "before_window_start")
		case end.Sub(start) > MaxUsageWindow:
			p.Add("window_end", "window_too_long")
		}
	}
	u.WindowStart, u.WindowEnd = start.Truncate(time.Microsecond), end.Truncate(time.Microsecond)
	return u, p.err()
}

// RecordUsage accepts a usage record from a platform service, idempotent
// on its id: the same record again answers the stored one (created
// false); the same id with other values is a conflict. Errors:
// validation_failed, conflict, unavailable.
func (s *Service) RecordUsage(ctx context.Context, caller Caller, in UsageInput) (UsageRecord, bool, error) {
	u, err := NewUsage(in, caller.Name)
	if err != nil {
		return UsageRecord{}, false, err
	}
	return RecordUsage(ctx, s.store, u)
}

// RecordUsage stores u through store, telling a replay of the same record
// (created false) from another record under its id (conflict).
func RecordUsage(ctx context.Context, store UsageStore, u UsageRecord) (UsageRecord, bool, error) {
	got, created, err := store.RecordUsage(ctx, u)
	if err != nil {
		return UsageRecord{}, false, err
	}
	if !created && !got.same(u) {
		return UsageRecord{}, false, errs.New(CodeConflict, "a usage record with this id was accepted with other values")
	}
	return got, created, nil
}

// Usage answers the account's hourly sums in [from, to) to its members;
// from and to are RFC 3339 (to defaults to now, from to a week before
// to). Errors: unauthenticated, not_found, validation_failed, unavailable.
func (s *Service) Usage(ctx context.Context, token, accountID, metric, from, to string) ([]HourlyUsage, time.Time, time.Time, error) {
	m, err := s.Member(ctx, token, accountID)
	if err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	var p problems
	if metric != "" && !ValidMetric(metric) {
		p.Add("metric", "metric_name")
	}
	end := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	if to != "" {
		if t, err := time.Parse(time.RFC3339Nano, to); err != nil {
			p.Add("to", "rfc3339")
		} else {
			end = t.UTC()
		}
	}
	start := end.Add(-DefaultUsageRange)
	if from != "" {
		if t, err := time.Parse(time.RFC3339Nano, from); err != nil {
			p.Add("from", "rfc3339")
		} else {
			start = t.UTC()
		}
	}
	if len(p.Fields) == 0 {
		switch {
		case !start.Before(end):
			p.Add("from", "not_before_to")
		case end.Sub(start) > MaxUsageRange:
			p.Add("from", "range_too_long")
		}
	}
	if err := p.err(); err != nil {
		return nil, start, end, err
	}
	hs, err := s.store.HourlyUsage(ctx, m.AccountID, metric, start, end)
	return hs, start, end, err
}

// UsageData is billing.usage.recorded's data.
type UsageData struct {
	UsageID     string `json:"usage_id"`
	AccountID   string `json:"account_id"`
	Metric      string `json:"metric"`
	Quantity    int64  `json:"quantity"`
	WindowStart string `json:"window_start"`
	WindowEnd   string `json:"window_end"`
	Source      string `json:"source"`
}

// UsageEvent is billing.usage.recorded; its subject is the account.
func UsageEvent(u UsageRecord) Event {
	return Event{Type: TypeUsageRecorded, Subject: u.AccountID, Data: UsageData{UsageID: u.ID, AccountID: u.AccountID,
		Metric: u.Metric, Quantity: u.Quantity, WindowStart: u.WindowStart.UTC().Format(time.RFC3339Nano),
		WindowEnd: u.WindowEnd.UTC().Format(time.RFC3339Nano), Source: u.Source}}
}

// MeterRelay sends the meter reports usage owes to the processor: every
// report is stored with its usage record, so none is lost to a crash or a
// processor outage, and each is keyed by its usage id, so a retry after a
// lost answer is counted once by the processor.
type MeterRelay struct {
	store     UsageStore
	processor Processor
	logger    *slog.Logger
	// Poll is how often pending reports are looked for (1s when zero).
	Poll time.Duration
	kick chan struct{}
}

// NewMeterRelay returns a relay over store and processor.
func NewMeterRelay(store UsageStore, processor Processor, logger *slog.Logger) *MeterRelay {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &MeterRelay{store: store, processor: processor, logger: logger, kick: make(chan struct{}, 1)}
}

// Kick makes the relay look for reports now.
func (r *MeterRelay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// retryAfter is the back-off after a report's n-th failed attempt:
// doubling from 2s, at most an hour.
func retryAfter(n int) time.Duration {
	d := 2 * time.Second << min(max(n-1, 0), 11)
	return min(d, time.Hour)
}

// Once sends the reports due now and returns how many were sent.
func (r *MeterRelay) Once(ctx context.Context) (int, error) {
	reports, err := r.store.PendingMeterReports(ctx, 64)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, m := range reports {
		err := r.processor.ReportUsage(ctx, MeterEvent{Identifier: m.UsageID, EventName: m.EventName, CustomerID: m.CustomerID,
			Value: m.Value, Timestamp: m.OccurredAt})
		failure := ""
		if err != nil {
			failure = truncate(err.Error(), 500)
			r.logger.WarnContext(ctx, "billing: meter event not accepted; retrying", "usage_id", m.UsageID, "attempt", m.Attempts+1,
				"err", failure)
		} else {
			sent++
		}
		if err := r.store.MeterReported(ctx, m.UsageID, failure, time.Now().Add(retryAfter(m.Attempts+1))); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// Run sends reports until ctx is done.
func (r *MeterRelay) Run(ctx context.Context) {
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if _, err := r.Once(ctx); err != nil && ctx.Err() == nil {
			r.logger.WarnContext(ctx, "billing: meter relay cannot read its reports", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		}
	}
}
