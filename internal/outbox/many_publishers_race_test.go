package outbox

import (
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// TestManyPublishersClaimDisjointly: 100 publishers racing over one outbox,
// each with several batches in flight, claim every row exactly once (no
// claim is shared, none is lost: the stream's deduplication would hide a
// shared one, so the claims themselves are counted) and deliver each after
// a single attempt.
func TestManyPublishersClaimDisjointly(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			db := sqltest.Open(t, engine, sqlstore.Migrations)
			ids := insertRows(t, db, 1000)
			_, js := eventstest.Connect(t, b)
			eventstest.EnsureStream(t, js, b)
			var mu sync.Mutex
			claims := map[int64]int{}
			// The lease is long, so that a slow machine cannot end one
			// legitimately before its batch is marked.
			opts := Options{Service: "identity", Stream: b.Stream, BatchSize: 7, InFlight: 3, Lease: time.Minute, PollInterval: 5 * time.Millisecond}
			opts.claimed = func(seqs []int64) {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range seqs {
					claims[s]++
				}
			}
			pubs := make([]*Publisher, 100)
			for i := range pubs {
				pubs[i] = NewPublisher(db, js, opts, discard())
			}
			stop := runPublishers(t, len(pubs), pubs...)
			testutil.Eventually(t, 90*time.Second, "every row published", func() bool { return countUnpublished(t, db) == 0 })
			stop()
			for _, r := range rows(t, db) {
				if claims[r.Seq] != 1 {
					t.Errorf("row %d claimed %d times, want once", r.Seq, claims[r.Seq])
				}
				if r.PublishedAt == nil || r.ParkedAt != nil || r.Attempts != 1 {
					t.Fatalf("row %d: published_at %v parked_at %v attempts %d error %q", r.Seq, r.PublishedAt, r.ParkedAt, r.Attempts, r.LastError)
				}
			}
			assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
		})
	})
}
