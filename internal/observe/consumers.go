package observe

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/sqldb"
)

var (
	consumerPending = prometheus.NewDesc("platform_events_consumer_pending_messages",
		"Messages in the stream the durable consumer has not been sent yet (its lag).", []string{"consumer"}, nil)
	consumerAckPending = prometheus.NewDesc("platform_events_consumer_ack_pending_messages",
		"Messages sent to the consumer and not yet acknowledged.", []string{"consumer"}, nil)
	consumerParked = prometheus.NewDesc("platform_events_consumer_parked_messages",
		"Events the consumer parked in parked_events; an operator must look at them.", []string{"consumer"}, nil)
	consumerUp = prometheus.NewDesc("platform_events_consumer_scrape_ok",
		"1 when the consumer's lag and parked events could be read at this scrape, else 0.", []string{"consumer"}, nil)
)

// Consumers registers, for each durable consumer named (a fixed name per
// service, so a bounded label), its lag read from JetStream and the events
// it parked read from db, at each scrape. It opens its own connection to
// eventsURL, closed by stop.
func (m *Metrics) Consumers(db *sqldb.DB, eventsURL string, stream events.Stream, names []string, logger *slog.Logger) (stop func(), err error) {
	if m == nil {
		return func() {}, nil
	}
	nc, err := events.Connect(eventsURL, "metrics", logger)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := &consumerCollector{db: db, js: js, stream: stream.WithDefaults().Name, names: names, logger: logger}
	if err := m.labelled.Register(c); err != nil {
		nc.Close()
		return nil, err
	}
	return func() { m.labelled.Unregister(c); nc.Close() }, nil
}

type consumerCollector struct {
	db     *sqldb.DB
	js     jetstream.JetStream
	stream string
	names  []string
	logger *slog.Logger
}

func (c *consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- consumerPending
	ch <- consumerAckPending
	ch <- consumerParked
	ch <- consumerUp
}

func (c *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for _, name := range c.names {
		var parked int64
		err := c.db.QueryRow(ctx, `SELECT count(*) FROM parked_events WHERE consumer = $1`, name).Scan(&parked)
		var info *jetstream.ConsumerInfo
		if err == nil {
			var cons jetstream.Consumer
			if cons, err = c.js.Consumer(ctx, c.stream, name); err == nil {
				info, err = cons.Info(ctx)
			}
		}
		if err != nil {
			c.logger.Warn("metrics: reading a consumer's lag", "consumer", name, "err", err)
			ch <- prometheus.MustNewConstMetric(consumerUp, prometheus.GaugeValue, 0, name)
			continue
		}
		ch <- prometheus.MustNewConstMetric(consumerPending, prometheus.GaugeValue, float64(info.NumPending), name)
		ch <- prometheus.MustNewConstMetric(consumerAckPending, prometheus.GaugeValue, float64(info.NumAckPending), name)
		ch <- prometheus.MustNewConstMetric(consumerParked, prometheus.GaugeValue, float64(parked), name)
		ch <- prometheus.MustNewConstMetric(consumerUp, prometheus.GaugeValue, 1, name)
	}
}
