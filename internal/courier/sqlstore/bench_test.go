package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// BenchmarkEnqueue: a consumer batch of 256 events, each delivered to the
// one endpoint of its account, enqueued in one transaction.
func BenchmarkEnqueue(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			ctx := context.Background()
			db := sqltest.Open(b, engine, sqlstore.Migrations)
			s := sqlstore.New(db)
			account := ids.New()
			if _, err := s.CreateEndpoint(ctx, courier.Endpoint{ID: ids.New(), AccountID: account, URL: "https://hooks.example.com/bench",
				EventTypes: []string{"identity.member.joined"}}, []byte("sealed")); err != nil {
				b.Fatal(err)
			}
			const n = 256
			batch := make([]consumer.Event, n)
			for b.Loop() {
				for i := range batch {
					batch[i] = consumer.Event{Ctx: ctx, Envelope: events.Envelope{SpecVersion: events.SpecVersion, ID: ids.New(),
						Type: "identity.member.joined", Source: "identity", Subject: account, Time: time.Now().UTC(),
						Data: []byte(`{"account_id":"` + account + `","user_id":"` + ids.New() + `","role":"member"}`)}}
				}
				if err := db.InTx(ctx, func(tx *sqldb.Tx) error { return sqlstore.Enqueue(ctx, tx, batch) }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delivery")
		})
	}
}
