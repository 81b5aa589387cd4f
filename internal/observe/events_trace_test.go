package observe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// recordSpans returns a provider whose spans the recorder keeps. It is
// handed to each component rather than installed as OpenTelemetry's
// global one, which the engines' subtests, running in parallel, would
// share.
func recordSpans(t *testing.T) (*tracetest.SpanRecorder, trace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return rec, tp
}

// A request that writes an event: the outbox row keeps its traceparent, the
// published message carries it as the traceparent header (never in the
// envelope), and the consumer's span continues the trace as a child of the
// header's span.
func TestAnEventCarriesItsRequestsTraceToTheConsumer(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		rec, tp := recordSpans(t)
		env := identitytest.New(t, engine, identitytest.Config{})
		tracing := observe.NewTracing(tp)
		observe.Statements(env.DB, nil, tracing)
		srv := httptest.NewServer(tracing.Middleware(httpapi.NewServer(httpapi.Deps{Service: env.Service, Logger: discard()})))
		defer srv.Close()

		const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		req, _ := http.NewRequest("POST", srv.URL+"/v1/users",
			strings.NewReader(`{"email":"ada@example.com","password":"`+identitytest.Password+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("register: status %d", resp.StatusCode)
		}

		rows, err := outbox.List(ctx, env.DB, 0)
		if err != nil || len(rows) == 0 {
			t.Fatalf("outbox rows: %v, %v", rows, err)
		}
		for _, r := range rows {
			if !strings.Contains(r.Traceparent, traceID) {
				t.Errorf("outbox row %s: traceparent %q, want the request's trace %s", r.Envelope.Type, r.Traceparent, traceID)
			}
		}

		broker := eventstest.Embedded(t)
		_, js := eventstest.Connect(t, broker)
		eventstest.EnsureStream(t, js, broker)
		pub := outbox.NewPublisher(env.DB, js, outbox.Options{Service: "identity", TracerProvider: tp}, discard())
		if n, err := pub.PublishBatch(ctx); err != nil || n != len(rows) {
			t.Fatalf("publish: %d rows, %v; want %d", n, err, len(rows))
		}

		str, err := js.Stream(ctx, broker.Stream.Name)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := str.GetLastMsgForSubject(ctx, broker.Stream.Subject("identity.user.created"))
		if err != nil {
			t.Fatal(err)
		}
		header := msg.Header.Get(events.TraceparentHeader)
		if !strings.HasPrefix(header, "00-"+traceID+"-") {
			t.Fatalf("message header traceparent %q, want the request's trace %s", header, traceID)
		}
		if strings.Contains(strings.ToLower(string(msg.Data)), "traceparent") || strings.Contains(string(msg.Data), traceID) {
			t.Errorf("the envelope carries the trace: %s", msg.Data)
		}
		headerSpan := strings.Split(header, "-")[2]

		if _, err := consumer.Migrate(ctx, env.DB); err != nil {
			t.Fatal(err)
		}
		handled := make(chan struct{}, 1)
		c, err := consumer.New(ctx, env.DB, js, consumer.Config{Name: "trace-test", Types: []string{"identity.user.created"}, TracerProvider: tp},
			consumer.Each(func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
				select {
				case handled <- struct{}{}:
				default:
				}
				return nil
			}), discard())
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Run(runCtx) }()
		select {
		case <-handled:
		case <-time.After(10 * time.Second):
			t.Fatal("the consumer never handled the event")
		}
		stop()
		<-done

		var server, publish, consume, dbOp sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			switch {
			case s.Name() == "POST /v1/users":
				server = s
			case s.Name() == "publish identity.user.created":
				publish = s
			case s.Name() == "consume identity.user.created":
				consume = s
			case s.Name() == "db sqlstore.CreateUser":
				dbOp = s
			}
		}
		if server == nil || publish == nil || consume == nil || dbOp == nil {
			var names []string
			for _, s := range rec.Ended() {
				names = append(names, s.Name())
			}
			t.Fatalf("spans: got %v, want the request's, a db operation's, the publish's and the consume's", names)
		}
		for _, s := range []sdktrace.ReadOnlySpan{server, publish, consume, dbOp} {
			if got := s.SpanContext().TraceID().String(); got != traceID {
				t.Errorf("span %q: trace %s, want %s", s.Name(), got, traceID)
			}
		}
		if dbOp.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Errorf("db span's parent %s, want the request's span %s", dbOp.Parent().SpanID(), server.SpanContext().SpanID())
		}
		if got := publish.SpanContext().SpanID().String(); got != headerSpan {
			t.Errorf("header names span %s, want the publish span %s", headerSpan, got)
		}
		if got := consume.Parent().SpanID().String(); got != headerSpan {
			t.Errorf("consume span's parent %s, want the header's span %s", got, headerSpan)
		}
		if consume.SpanKind() != trace.SpanKindConsumer || publish.SpanKind() != trace.SpanKindProducer {
			t.Errorf("span kinds: publish %v, consume %v", publish.SpanKind(), consume.SpanKind())
		}
	})
}
