package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/testutil"
)

// TestDiagnoseStream: a message id stored twice (published again after
// the stream's duplicate window) is named with both sequences, and an id
// the outbox table does not hold with its sequence.
func TestDiagnoseStream(t *testing.T) {
	ctx := context.Background()
	b := eventstest.Embedded(t)
	_, js := eventstest.Connect(t, b)
	stream := b.Stream
	// A window far shorter than the platform's, so the test can pass it.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream.Name, Subjects: []string{stream.SubjectPrefix + ".>"}, Duplicates: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	publish := func(id string) *jetstream.PubAck {
		t.Helper()
		ack, err := js.Publish(ctx, stream.Subject("identity.user.created"), []byte("{}"), jetstream.WithMsgID(id))
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	publish("a")
	publish("b")
	// Publish a again until the stream stores it: inside the window it is
	// acknowledged as a duplicate and not stored, so trying changes
	// nothing; past it, it is stored as sequence 3.
	testutil.Eventually(t, 10*time.Second, "the stream to store a again past its window", func() bool {
		return !publish("a").Duplicate
	})
	got, err := diagnoseStream(ctx, js, stream, 3, map[string]bool{"a": true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "2 distinct message ids; first repeat a at sequences 1 and 3, stored ") ||
		!strings.Contains(got, "; outbox table 1 rows; 1 ids not in the table, sequences 2–2, stored ") {
		t.Errorf("diagnosis = %q", got)
	}
}
