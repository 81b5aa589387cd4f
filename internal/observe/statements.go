package observe

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
)

// Statements times db's operations (a transaction, or a statement outside
// one; see sqldb.Observer) by operation name, the store method that ran
// them: platform_db_operation_duration_seconds. With tracing, each one
// inside a traced request, publish or consume is a span of its own named
// by the operation, never by its SQL. With neither it leaves db alone.
func Statements(db *sqldb.DB, m *Metrics, t *Tracing) {
	if m == nil && t == nil {
		return
	}
	o := &statements{}
	if m != nil {
		o.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "platform_db_operation_duration_seconds",
			Help:    "Time a database operation (a store method's transaction or statement) took, by operation.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"operation"})
		m.labelled.MustRegister(o.duration)
	}
	if t != nil {
		o.tracer = t.tracer
		o.system = attribute.String("db.system.name", map[sqldb.Engine]string{sqldb.Postgres: "postgresql", sqldb.SQLite: "sqlite"}[db.Engine])
	}
	db.Observer = o
}

type statements struct {
	duration *prometheus.HistogramVec
	tracer   trace.Tracer
	system   attribute.KeyValue
	// ops holds each operation's histogram and span name, so an operation
	// costs a map read, not a label lookup and a concatenation.
	ops sync.Map // string → *operation
}

type operation struct {
	observer prometheus.Observer
	span     string
	// attrs are the span's attributes, built once per operation and set
	// after its start: given as a start option, the SDK would copy them
	// once into the options and again into the span.
	attrs []attribute.KeyValue
}

// clientStart are a statement group's span options.
var clientStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

func (s *statements) operation(name string) *operation {
	if op, ok := s.ops.Load(name); ok {
		return op.(*operation)
	}
	op := &operation{span: "db " + name, attrs: []attribute.KeyValue{s.system, attribute.String("db.operation.name", name)}}
	if s.duration != nil {
		op.observer = s.duration.WithLabelValues(name)
	}
	got, _ := s.ops.LoadOrStore(name, op)
	return got.(*operation)
}

func (s *statements) Start(ctx context.Context, name string) (context.Context, func(error)) {
	op := s.operation(name)
	start := time.Now()
	var span trace.Span
	// Only inside a trace: the background loops' polling (outbox claims,
	// send loops) would otherwise each start a trace of one span.
	if s.tracer != nil && trace.SpanContextFromContext(ctx).IsValid() {
		ctx, span = s.tracer.Start(ctx, op.span, clientStart...)
		span.SetAttributes(op.attrs...)
	}
	return ctx, func(err error) {
		if op.observer != nil {
			op.observer.Observe(time.Since(start).Seconds())
		}
		if span != nil {
			// A domain answer (not found, conflict) is the operation
			// working, not failing.
			if _, domain := errs.As(err); err != nil && !domain {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}
