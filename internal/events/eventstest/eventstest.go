// Package eventstest gives tests of event delivery a real broker: a fresh
// embedded NATS JetStream server per test, and the machine's NATS at
// EVENTS_URL when that is set (each test on its own stream there, so tests
// sharing one server never see each other's events).
package eventstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/embeddednats"
)

// Broker is one NATS server a test publishes to, with the stream the test
// owns on it.
type Broker struct {
	Name   string // "embedded" or "events_url"
	URL    string
	Stream events.Stream
	// Server is the embedded server, nil for the machine's broker.
	Server *embeddednats.Server
}

// Embedded starts a fresh embedded server whose store lives in a temporary
// directory, stopped when the test ends. Its stream is the platform's
// default, PLATFORM_EVENTS on events.>.
func Embedded(t testing.TB) *Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := embeddednats.StartServer(ctx, embeddednats.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("embedded NATS: %v", err)
	}
	b := &Broker{Name: "embedded", URL: srv.URL(), Stream: events.Stream{}.WithDefaults(), Server: srv}
	t.Cleanup(func() { b.Server.Shutdown() })
	return b
}

// Restart brings an embedded server back on the same port and store after
// Shutdown, as a broker that was down and came back.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if b.Server == nil {
		t.Fatal("Restart needs an embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := embeddednats.StartServer(ctx, embeddednats.Options{Dir: b.Server.Dir(), Port: b.Server.Port()})
	if err != nil {
		t.Fatalf("restart embedded NATS: %v", err)
	}
	b.Server = srv
}

// Machine returns the broker at EVENTS_URL with a stream and subject prefix
// unique to this test, deleted when the test ends; it skips the test when
// EVENTS_URL is unset.
func Machine(t testing.TB) *Broker {
	t.Helper()
	url := os.Getenv("EVENTS_URL")
	if url == "" {
		t.Skip("EVENTS_URL not set")
	}
	suffix := randomHex(6)
	b := &Broker{Name: "events_url", URL: url, Stream: events.Stream{
		Name:          "TEST_" + strings.ToUpper(suffix),
		SubjectPrefix: "test_" + suffix,
	}.WithDefaults()}
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			return
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, b.Stream.Name)
	})
	return b
}

// Each runs fn as a subtest against a fresh embedded broker, and again
// against the machine's broker when EVENTS_URL is set.
func Each(t *testing.T, fn func(t *testing.T, b *Broker)) {
	t.Helper()
	t.Run("embedded", func(t *testing.T) { fn(t, Embedded(t)) })
	if os.Getenv("EVENTS_URL") != "" {
		t.Run("events_url", func(t *testing.T) { fn(t, Machine(t)) })
	}
}

// Connect opens a connection to b that retries forever and never buffers
// while disconnected (as production does), closed when the test ends.
func Connect(t testing.TB, b *Broker) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(b.URL,
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatalf("connect %s: %v", b.URL, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// EnsureStream creates b's stream.
func EnsureStream(t testing.TB, js jetstream.JetStream, b *Broker) jetstream.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := events.EnsureStream(ctx, js, b.Stream)
	if err != nil {
		t.Fatalf("ensure stream: %v", err)
	}
	return str
}

// Message is one stored message of the stream.
type Message struct {
	MsgID    string // the Nats-Msg-Id header
	Subject  string
	Envelope events.Envelope
}

// ReadStream returns every message in b's stream, in stream order,
// decoding each envelope strictly (a malformed one fails the test).
func ReadStream(t testing.TB, js jetstream.JetStream, b *Broker) []Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	str, err := js.Stream(ctx, b.Stream.Name)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	total := int(info.State.Msgs)
	if total == 0 {
		return nil
	}
	cons, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.Stream.Wildcard()}})
	if err != nil {
		t.Fatalf("ordered consumer: %v", err)
	}
	var out []Message
	for len(out) < total {
		batch, err := cons.Fetch(min(total-len(out), 500), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			env, err := events.Decode(m.Data())
			if err != nil {
				t.Fatalf("stream message %q: %v", m.Data(), err)
			}
			out = append(out, Message{MsgID: m.Headers().Get(jetstream.MsgIDHeader), Subject: m.Subject(), Envelope: env})
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("fetch: %v", err)
		}
		if n == 0 {
			t.Fatalf("stream reports %d messages, read %d", total, len(out))
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
