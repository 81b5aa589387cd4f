package outbox

import (
	"testing"
	"time"

	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestManyPublishersClaimDisjointly: 100 publishers racing over one outbox
// deliver every row exactly once, each after a single attempt: no claim is
// shared, none is lost.
func TestManyPublishersClaimDisjointly(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			db := sqltest.Open(t, engine, sqlstore.Migrations)
			ids := insertRows(t, db, 1000)
			_, js := eventstest.Connect(t, b)
			eventstest.EnsureStream(t, js, b)
			opts := Options{Service: "identity", Stream: b.Stream, BatchSize: 7, PollInterval: 5 * time.Millisecond}
			pubs := make([]*Publisher, 100)
			for i := range pubs {
				pubs[i] = NewPublisher(db, js, opts, discard())
			}
			stop := runPublishers(t, len(pubs), pubs...)
			eventstest.Eventually(t, 90*time.Second, "every row published", func() bool { return countUnpublished(t, db) == 0 })
			stop()
			for _, r := range rows(t, db) {
				if r.PublishedAt == nil || r.ParkedAt != nil || r.Attempts != 1 {
					t.Fatalf("row %d: published_at %v parked_at %v attempts %d error %q", r.Seq, r.PublishedAt, r.ParkedAt, r.Attempts, r.LastError)
				}
			}
			assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
		})
	})
}
