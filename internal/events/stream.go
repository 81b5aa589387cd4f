package events

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const (
	// DefaultStream is the JetStream stream every publisher writes to.
	DefaultStream = "PLATFORM_EVENTS"
	// DefaultSubjectPrefix prefixes the type in the NATS subject:
	// events.<type>, for example events.identity.user.created.
	DefaultSubjectPrefix = "events"
	// MinDuplicateWindow is the shortest deduplication window the stream
	// may have: a publisher's retry of the same envelope id inside it is
	// stored once.
	MinDuplicateWindow = 2 * time.Minute
	// AttemptHeader carries the publisher's delivery attempt number, which
	// is transport metadata and so never in the envelope.
	AttemptHeader = "Platform-Attempt"
)

// Stream names the stream and its subjects. The zero value is the
// platform's stream; tests on a shared server use their own name and prefix
// (two streams may not share subjects).
type Stream struct {
	Name            string        // default DefaultStream
	SubjectPrefix   string        // default DefaultSubjectPrefix
	DuplicateWindow time.Duration // default and minimum MinDuplicateWindow
}

// WithDefaults fills the zero fields.
func (s Stream) WithDefaults() Stream {
	if s.Name == "" {
		s.Name = DefaultStream
	}
	if s.SubjectPrefix == "" {
		s.SubjectPrefix = DefaultSubjectPrefix
	}
	if s.DuplicateWindow < MinDuplicateWindow {
		s.DuplicateWindow = MinDuplicateWindow
	}
	return s
}

// Subject is the NATS subject an event of type typ is published on.
func (s Stream) Subject(typ string) string { return s.WithDefaults().SubjectPrefix + "." + typ }

// Wildcard is the subject filter matching every event of the stream.
func (s Stream) Wildcard() string { return s.WithDefaults().SubjectPrefix + ".>" }

// Config is the stream's JetStream configuration: file storage, every
// event kept (retention is an operator's decision, not the publisher's),
// and the deduplication window on Nats-Msg-Id.
func (s Stream) Config() jetstream.StreamConfig {
	s = s.WithDefaults()
	return jetstream.StreamConfig{
		Name:        s.Name,
		Description: "Platform events (platform.md section 6): one envelope per message, Nats-Msg-Id = envelope id.",
		Subjects:    []string{s.Wildcard()},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Duplicates:  s.DuplicateWindow,
	}
}

// EnsureStream creates the stream when it is missing. An existing stream
// must carry the events wildcard; its deduplication window is widened to
// s.DuplicateWindow when it is shorter, and nothing else about it changes.
func EnsureStream(ctx context.Context, js jetstream.JetStream, s Stream) (jetstream.Stream, error) {
	s = s.WithDefaults()
	str, err := js.Stream(ctx, s.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		str, err = js.CreateStream(ctx, s.Config())
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another replica created it a moment ago.
			str, err = js.Stream(ctx, s.Name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", s.Name, err)
	}
	cfg := str.CachedInfo().Config
	if !slices.Contains(cfg.Subjects, s.Wildcard()) {
		return nil, fmt.Errorf("stream %s exists with subjects %v, not %s", s.Name, cfg.Subjects, s.Wildcard())
	}
	if cfg.Duplicates < s.DuplicateWindow {
		cfg.Duplicates = s.DuplicateWindow
		if str, err = js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("stream %s: widen the duplicate window: %w", s.Name, err)
		}
	}
	return str, nil
}

// ValidateURL checks an EVENTS_URL: one or more comma-separated server
// URLs with scheme nats, tls, ws or wss and a host.
func ValidateURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errors.New("must be a NATS URL such as nats://127.0.0.1:4222")
	}
	for _, part := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" {
			return fmt.Errorf("must be a NATS URL such as nats://127.0.0.1:4222, got %q", part)
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("scheme must be nats, tls, ws or wss, got %q", u.Scheme)
		}
	}
	return nil
}
