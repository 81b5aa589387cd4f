package observe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/platformco/platform/internal/errs"
)

// DurationBuckets suit the services' own work, from a cached read to a
// slow upstream.
var DurationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Counter registers a service's domain counter, labelled with the service's
// name and labels, whose values the caller keeps bounded (an outcome from
// a fixed set, never an id). A nil *Metrics returns nil: the wiring builds
// no seam then, and the domain's nil seam records nothing.
func (m *Metrics) Counter(name, help string, labels ...string) *prometheus.CounterVec {
	if m == nil {
		return nil
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.labelled.MustRegister(c)
	return c
}

// Histogram registers a service's domain histogram (see Counter).
func (m *Metrics) Histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	if m == nil {
		return nil
	}
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.labelled.MustRegister(h)
	return h
}

// Outcomes pre-binds a counter's one label to each of a fixed set of
// values, so counting costs no label lookup; a value outside the set
// counts as "other".
type Outcomes struct {
	known map[string]prometheus.Counter
	other prometheus.Counter
}

// NewOutcomes binds c (one label) to values and "other".
func NewOutcomes(c *prometheus.CounterVec, values ...string) *Outcomes {
	o := &Outcomes{known: make(map[string]prometheus.Counter, len(values)), other: c.WithLabelValues("other")}
	for _, v := range values {
		o.known[v] = c.WithLabelValues(v)
	}
	return o
}

// Add counts n of outcome.
func (o *Outcomes) Add(outcome string, n float64) {
	c, ok := o.known[outcome]
	if !ok {
		c = o.other
	}
	c.Add(n)
}

// Inc counts one outcome.
func (o *Outcomes) Inc(outcome string) { o.Add(outcome, 1) }

// OutboxPublished counts the outbox publisher's outcomes, rows published,
// failed attempts and rows parked (outbox.Options.Counted):
// platform_outbox_events_total{outcome}, whose rate of "published" is the
// publish rate. A nil *Metrics returns nil.
func (m *Metrics) OutboxPublished() func(published, failed, parked int) {
	if m == nil {
		return nil
	}
	o := NewOutcomes(m.Counter("platform_outbox_events_total",
		"Outbox rows by publishing outcome: published, failed (an attempt to retry) or parked.", "outcome"),
		"published", "failed", "parked")
	return func(published, failed, parked int) {
		o.Add("published", float64(published))
		o.Add("failed", float64(failed))
		o.Add("parked", float64(parked))
	}
}

// OutcomeOf names an operation's outcome for a counter: ok when err is
// nil, the error's code when it has one (a fixed set per service), else
// "error".
func OutcomeOf(err error) string {
	if err == nil {
		return "ok"
	}
	if c := errs.Code(err); c != "" {
		return c
	}
	return "error"
}
