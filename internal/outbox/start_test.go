package outbox

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events/eventstest"
)

// TestNewJetStreamWindowHoldsTheBatchesInFlight publishes InFlight ×
// BatchSize messages whose acknowledgements never come (a plain subscriber
// takes them and never answers), as when the broker is slow: every one must
// be sent. The client's default window (4000) refuses the rest after a
// short stall, which would cost those rows an attempt.
func TestNewJetStreamWindowHoldsTheBatchesInFlight(t *testing.T) {
	b := eventstest.Embedded(t)
	nc, _ := eventstest.Connect(t, b)
	const subject = "outbox.window.silent"
	if _, err := nc.SubscribeSync(subject); err != nil {
		t.Fatal(err)
	}
	opts := Options{BatchSize: 2500, InFlight: 2}
	publishAll := func(js jetstream.JetStream) (sent int, err error) {
		for sent < opts.InFlight*opts.BatchSize {
			if _, err := js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: []byte("{}")}); err != nil {
				return sent, err
			}
			sent++
		}
		return sent, nil
	}

	js, err := NewJetStream(nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sent, err := publishAll(js); err != nil {
		t.Errorf("NewJetStream: %d of %d sent, then %v", sent, opts.InFlight*opts.BatchSize, err)
	}

	// The default window is smaller, so the check above is not vacuous.
	defaultJS, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if sent, err := publishAll(defaultJS); !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		t.Errorf("default client: %d sent, err %v; want it stalled before %d", sent, err, opts.InFlight*opts.BatchSize)
	}
}
