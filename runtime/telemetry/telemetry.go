// Package telemetry gives fleet-worker one span per step linked to its
// producer, Prometheus metrics on /metrics, and JSON logs carrying the
// trace id.
//
// Trace context crosses the async hops two ways: the W3C traceparent SQS
// message attribute when the producer set it, and always the business
// trace id in the event's detail.trace_id. ExtractInto prefers the first and
// derives a deterministic OTel trace id from the second otherwise (see
// DerivedSpanContext), so a conversation's steps line up in one trace either
// way.
//
// Wiring (core):
//
//	tel, err := telemetry.New(telemetry.Options{ServiceName: rc.Telemetry.ServiceName, Class: rc.Class})
//	counter.OnRequest = tel.Metrics.CountAWSRequest          // aws_api_requests_total
//	addr, err := tel.ServeMetrics(rc.Telemetry.MetricsAddr)  // GET /metrics
//	ctx := telemetry.ExtractInto(ctx, msgAttrs, detailTraceID)
//	ctx, step := tel.StartStep(ctx, telemetry.StepInfo{TraceID: detailTraceID, MessageID: id, WorkKey: key, Attempt: n})
//	tel.Logger.InfoContext(ctx, "step started")             // carries trace_id, otel_trace_id, span_id, class
//	...
//	step.End(telemetry.OutcomeSuccess, nil)
//	defer tel.Shutdown(ctx)                                  // last, after work drained
package telemetry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetc/fleetc/runtime/telemetry/genai"
)

// Options configures New.
type Options struct {
	// ServiceName is the OTel service.name (telemetry.service_name).
	ServiceName string
	// Class is the agent class; it labels metrics and logs.
	Class string
	// LogWriter receives JSON logs; default os.Stderr.
	LogWriter io.Writer
	// LogLevel is the minimum level; default Info.
	LogLevel slog.Level
	// SpanExporter receives finished spans (batched). Nil keeps spans
	// in-process only: ids, links and log correlation still work.
	SpanExporter sdktrace.SpanExporter
	// SyncExport exports each span as it ends (tests); default batched.
	SyncExport bool
}

// Telemetry bundles the tracer, metrics and logger of one worker.
type Telemetry struct {
	Class    string
	Logger   *slog.Logger
	Metrics  *Metrics
	Provider *sdktrace.TracerProvider
	tracer   trace.Tracer

	mu     sync.Mutex
	server *http.Server
	served chan error
}

// New builds Telemetry. It registers nothing globally.
func New(o Options) (*Telemetry, error) {
	if o.ServiceName == "" {
		return nil, errors.New("telemetry: service name is required")
	}
	w := o.LogWriter
	if w == nil {
		w = os.Stderr
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", o.ServiceName),
		attribute.String(AttrClass, o.Class),
	)
	popts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample()))}
	if o.SpanExporter != nil {
		if o.SyncExport {
			popts = append(popts, sdktrace.WithSyncer(o.SpanExporter))
		} else {
			popts = append(popts, sdktrace.WithBatcher(o.SpanExporter))
		}
	}
	tp := sdktrace.NewTracerProvider(popts...)
	base := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: o.LogLevel})
	logger := slog.New(newTraceHandler(base)).With(slog.String("service", o.ServiceName))
	if o.Class != "" {
		logger = logger.With(slog.String(LogClass, o.Class))
	}
	m := NewMetrics()
	// Export zeros from the start so rate() and absent() alerts work
	// before the first retry or dead letter.
	m.InFlight.WithLabelValues(o.Class)
	m.Retries.WithLabelValues(o.Class)
	m.DeadLettered.WithLabelValues(o.Class)
	return &Telemetry{
		Class:    o.Class,
		Logger:   logger,
		Metrics:  m,
		Provider: tp,
		tracer:   tp.Tracer("github.com/fleetc/fleetc/runtime"),
	}, nil
}

// StepInfo describes the message a step comes from.
type StepInfo struct {
	// TraceID is the business trace id (detail.trace_id).
	TraceID string
	// MessageID is the SQS message id.
	MessageID string
	// WorkKey is the idempotency key.
	WorkKey string
	// Attempt is the SQS ApproximateReceiveCount (1 = first delivery).
	Attempt int
	// Source is "eventbridge" or "stepfunctions" (the message shape).
	Source string
	// ConversationID is gen_ai.conversation.id: the conversation the step belongs to
	// (detail.conversation_id, else the business trace id).
	ConversationID string
}

// Step is one running step: a span, the in-flight gauge and a start
// time. End it exactly once.
type Step struct {
	tel   *Telemetry
	span  trace.Span
	start time.Time
	once  sync.Once
}

type traceIDKey struct{}

// StartStep starts the step's span, "invoke_agent {class}" (the GenAI conventions' agent
// span: the class is the agent, with the conversation id), as a child of ctx's remote
// producer context (from Extract; else derived from info.TraceID) with a link to that
// producer span. It is also the message's consumer span (kind consumer, messaging.*
// attributes): one span per step, whose events record every decision about it. It
// increments agent_steps_in_flight and returns a context carrying the span and the
// business trace id for logging.
func (t *Telemetry) StartStep(ctx context.Context, info StepInfo) (context.Context, *Step) {
	attrs := append(genai.AgentAttributes(t.Class, info.ConversationID),
		attribute.String(AttrMessagingSys, MessagingSystemSQS),
		attribute.String(AttrClass, t.Class),
	)
	if info.TraceID != "" {
		attrs = append(attrs, attribute.String(AttrTraceID, info.TraceID))
		ctx = context.WithValue(ctx, traceIDKey{}, info.TraceID)
	}
	if info.MessageID != "" {
		attrs = append(attrs, attribute.String(AttrMessageID, info.MessageID))
	}
	if info.WorkKey != "" {
		attrs = append(attrs, attribute.String(AttrWorkKey, info.WorkKey))
	}
	if info.Attempt > 0 {
		attrs = append(attrs, attribute.Int(AttrAttempt, info.Attempt))
	}
	if info.Source != "" {
		attrs = append(attrs, attribute.String(AttrSource, info.Source))
	}
	if !trace.SpanContextFromContext(ctx).IsValid() && info.TraceID != "" {
		// No Extract upstream: fall back to the trace_id-derived parent.
		ctx = trace.ContextWithRemoteSpanContext(ctx, DerivedSpanContext(info.TraceID))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	if producer := trace.SpanContextFromContext(ctx); producer.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: producer}))
	}
	ctx, span := t.tracer.Start(ctx, genai.SpanName(genai.InvokeAgent, t.Class), opts...)
	t.Metrics.InFlight.WithLabelValues(t.Class).Inc()
	return ctx, &Step{tel: t, span: span, start: time.Now()}
}

// Event records a decision on the step span in ctx (Event* names, Attr* attributes); a
// context without a recording span records nothing.
func Event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	trace.SpanFromContext(ctx).AddEvent(name, trace.WithAttributes(attrs...))
}

// Span returns the step's span (e.g. for events or child spans).
func (s *Step) Span() trace.Span { return s.span }

// End records the outcome (Outcome* constants) and err on the span,
// observes agent_step_duration_seconds, bumps the retry/dead-letter
// counters for those outcomes, decrements the in-flight gauge and ends
// the span. Calls after the first are ignored.
func (s *Step) End(outcome string, err error) {
	s.once.Do(func() {
		d := time.Since(s.start)
		s.span.SetAttributes(attribute.String(AttrOutcome, outcome))
		if err != nil {
			s.span.RecordError(err)
		}
		switch outcome {
		case OutcomeSuccess, OutcomeDuplicate:
			s.span.SetStatus(codes.Ok, "")
		default:
			msg := outcome
			if err != nil {
				msg = err.Error()
			}
			s.span.SetStatus(codes.Error, msg)
		}
		s.tel.Metrics.InFlight.WithLabelValues(s.tel.Class).Dec()
		s.tel.Metrics.ObserveStep(s.tel.Class, outcome, d)
		s.span.End()
	})
}

// TraceIDFromContext returns the business trace id StartStep stored.
func TraceIDFromContext(ctx context.Context) string {
	v, _ := ctx.Value(traceIDKey{}).(string)
	return v
}

// ServeMetrics listens on addr (e.g. ":9090"; "127.0.0.1:0" in tests)
// and serves GET /metrics until Shutdown. It returns the bound address.
func (t *Telemetry) ServeMetrics(addr string) (net.Addr, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.server != nil {
		return nil, errors.New("telemetry: metrics server already running")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", t.Metrics.Handler())
	t.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	t.served = make(chan error, 1)
	go func() { t.served <- t.server.Serve(ln) }()
	return ln.Addr(), nil
}

// Shutdown flushes and stops span export, then stops the metrics server
// (kept up until last so a final scrape sees the drained state). Call it
// after in-flight work has drained. It is safe to call more than once.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if err := t.Provider.ForceFlush(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := t.Provider.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	t.mu.Lock()
	srv, served := t.server, t.served
	t.server = nil
	t.mu.Unlock()
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// traceHandler adds trace ids from the record's context to JSON logs:
// trace_id (business), otel_trace_id and span_id. Use the *Context
// logging methods (InfoContext, ErrorContext) to get them.
//
// It also keeps every line free of duplicate keys, which strict log pipelines
// reject: a key already set on the logger (service, class), one of slog's own
// (time, level, msg, source), or one set earlier in the record keeps its first
// value, and later copies are dropped. Keys are tracked at the top level;
// after WithGroup the group's object starts a fresh key space.
type traceHandler struct {
	next slog.Handler
	keys map[string]bool // keys already on every line at the current level
}

func newTraceHandler(next slog.Handler) *traceHandler {
	return &traceHandler{next: next, keys: map[string]bool{
		slog.TimeKey: true, slog.LevelKey: true, slog.MessageKey: true, slog.SourceKey: true,
	}}
}

func (h *traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := TraceIDFromContext(ctx); id != "" {
			r.AddAttrs(slog.String(LogTraceID, id))
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String(LogOTelTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
		}
	}
	seen := map[string]bool{}
	dup := false
	r.Attrs(func(a slog.Attr) bool {
		dup = dup || h.keys[a.Key] || seen[a.Key]
		seen[a.Key] = true
		return !dup
	})
	if !dup {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	clear(seen)
	r.Attrs(func(a slog.Attr) bool {
		if !h.keys[a.Key] && !seen[a.Key] {
			seen[a.Key] = true
			out.AddAttrs(a)
		}
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	keys := maps.Clone(h.keys)
	kept := make([]slog.Attr, 0, len(as))
	for _, a := range as {
		if keys != nil && keys[a.Key] {
			continue
		}
		if keys != nil {
			keys[a.Key] = true
		}
		kept = append(kept, a)
	}
	return &traceHandler{next: h.next.WithAttrs(kept), keys: keys}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &traceHandler{next: h.next.WithGroup(name), keys: map[string]bool{}}
}
