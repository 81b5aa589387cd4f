//go:build e2e

package scaleout

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/eventstest"
)

// dedupConsumer is a durable JetStream consumer that applies each event
// once by its envelope id, as every platform consumer must: it records
// every delivery, and withholds the acknowledgement of some first
// deliveries so the server redelivers them and the deduplication has
// something to do.
type dedupConsumer struct {
	mu         sync.Mutex
	deliveries map[string][]delivery // envelope id → every delivery of it
	problems   []string
	withheld   int
}

// delivery is one delivery of a message.
type delivery struct {
	streamSeq    uint64
	numDelivered uint64
}

// withholdEvery: the first delivery of every stream message whose
// sequence is a multiple of this is left unacknowledged.
const withholdEvery = 17

func startDedupConsumer(t *testing.T, eventsURL string) *dedupConsumer {
	t.Helper()
	b := &eventstest.Broker{URL: eventsURL, Stream: events.Stream{}.WithDefaults()}
	_, js := eventstest.Connect(t, b)
	str := eventstest.EnsureStream(t, js, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := str.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       "scaleout-dedup",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       time.Second,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: b.Stream.Wildcard(),
		MaxAckPending: 100000,
	})
	if err != nil {
		t.Fatalf("create the test's consumer: %v", err)
	}
	c := &dedupConsumer{deliveries: map[string][]delivery{}}
	cc, err := cons.Consume(c.handle)
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	t.Cleanup(cc.Stop)
	return c
}

func (c *dedupConsumer) handle(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		c.problem("message without metadata on %s: %v", msg.Subject(), err)
		_ = msg.Term()
		return
	}
	env, err := events.Decode(msg.Data())
	if err != nil {
		c.problem("stream message %d is not a valid envelope: %v", meta.Sequence.Stream, err)
		_ = msg.Term()
		return
	}
	if got := msg.Headers().Get(jetstream.MsgIDHeader); got != env.ID {
		c.problem("stream message %d: Nats-Msg-Id %q, envelope id %s", meta.Sequence.Stream, got, env.ID)
	}
	if want := (events.Stream{}).Subject(env.Type); msg.Subject() != want {
		c.problem("event %s of type %s on subject %s, want %s", env.ID, env.Type, msg.Subject(), want)
	}
	c.mu.Lock()
	c.deliveries[env.ID] = append(c.deliveries[env.ID], delivery{streamSeq: meta.Sequence.Stream, numDelivered: meta.NumDelivered})
	withhold := meta.NumDelivered == 1 && meta.Sequence.Stream%withholdEvery == 0
	if withhold {
		c.withheld++
	}
	c.mu.Unlock()
	if !withhold {
		_ = msg.Ack()
	}
}

func (c *dedupConsumer) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// distinct is how many events were applied: ids, whatever the deliveries.
func (c *dedupConsumer) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.deliveries)
}

// hasAll reports whether every id in ids was delivered.
func (c *dedupConsumer) hasAll(ids []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if _, ok := c.deliveries[id]; !ok {
			return false
		}
	}
	return true
}

// redeliveredWithheld reports whether every withheld message came back.
func (c *dedupConsumer) redeliveredWithheld() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ds := range c.deliveries {
		if ds[0].numDelivered == 1 && ds[0].streamSeq%withholdEvery == 0 && len(ds) < 2 {
			return false
		}
	}
	return true
}

// check judges the deliveries against the outbox's ids: each id applied
// once, and any repeat a redelivery of the same stream message (never a
// second copy in the stream, which the broker's Nats-Msg-Id window keeps
// out however often a publisher sends a row again).
func (c *dedupConsumer) check(t *testing.T, outboxIDs []string) (redeliveries int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.problems {
		t.Error(p)
	}
	inOutbox := make(map[string]bool, len(outboxIDs))
	for _, id := range outboxIDs {
		inOutbox[id] = true
		if _, ok := c.deliveries[id]; !ok {
			t.Errorf("outbox row %s was never delivered", id)
		}
	}
	for id, ds := range c.deliveries {
		if !inOutbox[id] {
			t.Errorf("event %s was delivered but is no outbox row", id)
		}
		for i, d := range ds {
			if d.streamSeq != ds[0].streamSeq {
				t.Errorf("event %s is in the stream twice (sequences %d and %d)", id, ds[0].streamSeq, d.streamSeq)
			}
			if i > 0 {
				redeliveries++
				if d.numDelivered <= ds[i-1].numDelivered {
					t.Errorf("event %s delivered again without being a redelivery (delivery counts %d then %d)", id, ds[i-1].numDelivered, d.numDelivered)
				}
			}
		}
	}
	if len(c.deliveries) != len(outboxIDs) {
		t.Errorf("the consumer applied %d distinct events, the outbox holds %d rows", len(c.deliveries), len(outboxIDs))
	}
	return redeliveries
}

// streamMessages is how many messages the stream holds.
func streamMessages(t *testing.T, eventsURL string) uint64 {
	t.Helper()
	b := &eventstest.Broker{URL: eventsURL, Stream: events.Stream{}.WithDefaults()}
	_, js := eventstest.Connect(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := js.Stream(ctx, b.Stream.Name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
