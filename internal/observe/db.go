package observe

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/platformco/platform/internal/sqldb"
)

// scrapeTimeout bounds the queries a scrape runs, so a slow database makes
// a scrape miss values rather than hang.
const scrapeTimeout = 2 * time.Second

// Database registers db's pool gauges (open, in use, idle connections,
// waits and their duration) under the name db.
func (m *Metrics) Database(db *sql.DB, name string) {
	if m == nil {
		return
	}
	m.labelled.MustRegister(collectors.NewDBStatsCollector(db, name))
}

// Outbox registers the backlog of db's outbox table, read at each scrape:
// unpublished rows, the age of the oldest one and parked rows. These are
// what the OutboxStalled and OutboxParked alerts watch; they come from the
// table, so they hold whichever replica publishes.
func (m *Metrics) Outbox(db *sqldb.DB, logger *slog.Logger) {
	if m == nil {
		return
	}
	m.labelled.MustRegister(&outboxCollector{db: db, logger: logger})
}

var (
	outboxUnpublished = prometheus.NewDesc("platform_outbox_unpublished_rows",
		"Outbox rows neither published nor parked.", nil, nil)
	outboxOldest = prometheus.NewDesc("platform_outbox_oldest_unpublished_age_seconds",
		"Age of the oldest outbox row neither published nor parked; 0 when there is none.", nil, nil)
	outboxParked = prometheus.NewDesc("platform_outbox_parked_rows",
		"Outbox rows parked after their last attempt; an operator must look at them.", nil, nil)
	outboxUp = prometheus.NewDesc("platform_outbox_scrape_ok",
		"1 when the outbox backlog could be read at this scrape, else 0.", nil, nil)
)

type outboxCollector struct {
	db     *sqldb.DB
	logger *slog.Logger
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxUnpublished
	ch <- outboxOldest
	ch <- outboxParked
	ch <- outboxUp
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	var unpublished, parked int64
	var oldest sql.NullTime
	err := c.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM outbox WHERE published_at IS NULL AND parked_at IS NULL),
		(SELECT count(*) FROM outbox WHERE parked_at IS NOT NULL AND published_at IS NULL)`).
		Scan(&unpublished, &parked)
	if err == nil {
		// The first row in seq order, not min(created_at): SQLite's
		// aggregate would lose the column's time type.
		err = c.db.QueryRow(ctx, `SELECT created_at FROM outbox
			WHERE published_at IS NULL AND parked_at IS NULL ORDER BY seq LIMIT 1`).Scan(&oldest)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	}
	if err != nil {
		c.logger.Warn("metrics: reading the outbox backlog", "err", err)
		ch <- prometheus.MustNewConstMetric(outboxUp, prometheus.GaugeValue, 0)
		return
	}
	age := 0.0
	if oldest.Valid {
		age = max(0, c.db.Now().Sub(oldest.Time).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(outboxUnpublished, prometheus.GaugeValue, float64(unpublished))
	ch <- prometheus.MustNewConstMetric(outboxOldest, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(outboxParked, prometheus.GaugeValue, float64(parked))
	ch <- prometheus.MustNewConstMetric(outboxUp, prometheus.GaugeValue, 1)
}
