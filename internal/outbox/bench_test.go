package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// BenchmarkPublish measures events per second from outbox rows to
// acknowledged stream messages, with one and with two publishers sharing
// the database (default options), on each engine, against an embedded NATS
// server. Each iteration publishes a backlog of 10,000 rows (inserted
// untimed); the clock stops when no row is pending.
func BenchmarkPublish(b *testing.B) {
	const backlog = 10000
	for _, engine := range sqltest.Engines() {
		for _, publishers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/publishers=%d", engine, publishers), func(b *testing.B) {
				broker := eventstest.Embedded(b)
				db := sqltest.Open(b, engine, sqlstore.Migrations)
				_, js := eventstest.Connect(b, broker)
				eventstest.EnsureStream(b, js, broker)
				pubs := make([]*Publisher, publishers)
				for i := range pubs {
					_, jsi := eventstest.Connect(b, broker)
					pubs[i] = NewPublisher(db, jsi, Options{Stream: broker.Stream, PollInterval: time.Millisecond}, discard())
				}
				var elapsed time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					insertRows(b, db, backlog)
					b.StartTimer()
					start := time.Now()
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{}, len(pubs))
					for _, p := range pubs {
						go func() {
							_ = p.Run(ctx)
							done <- struct{}{}
						}()
					}
					for pending(b, db) {
						time.Sleep(2 * time.Millisecond)
					}
					elapsed += time.Since(start)
					cancel()
					for range pubs {
						<-done
					}
				}
				b.ReportMetric(float64(backlog*b.N)/elapsed.Seconds(), "events/s")
			})
		}
	}
}

// pending matches the partial index's predicate, so polling it costs an
// index probe, not a count competing with the publishers for the database.
func pending(b *testing.B, db *sqldb.DB) bool {
	var p bool
	err := db.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM outbox WHERE published_at IS NULL AND parked_at IS NULL)`).Scan(&p)
	if err != nil {
		b.Fatal(err)
	}
	return p
}
