package router

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/fleetc/fleetc/runtime/telemetry/genai"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// The metric and label names are in runtime/telemetry/metric.

// Metrics are the router's Prometheus collectors. A nil *Metrics records nothing.
type Metrics struct {
	calls, failures, cooldowns, fallbacks, tokens *prometheus.CounterVec
	inflight                                      *prometheus.GaugeVec
	duration                                      *prometheus.HistogramVec
}

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metric.ModelCalls,
			Help: "Model calls by policy, deployment and outcome (success or failure)."}, []string{metric.LabelPolicy, "deployment", "outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metric.ModelFailures,
			Help: "Failed model calls by class: retryable, timeout, spend_limit, context_window, permanent."}, []string{metric.LabelPolicy, "deployment", "class"}),
		cooldowns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metric.ModelCooldowns,
			Help: "Times a deployment went into cooldown after more than allowed_fails failures."}, []string{metric.LabelPolicy, "deployment"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metric.ModelFallbacks,
			Help: "Cross-group fallbacks taken, from the requested policy to the fallback."}, []string{metric.LabelPolicy, "to", "reason"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metric.ModelTokens,
			Help: "Tokens reported by providers, by type (input, output)."}, []string{metric.LabelPolicy, "deployment", "type"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metric.ModelInFlight,
			Help: "Model calls in flight in this process, per policy group."}, []string{metric.LabelPolicy}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metric.ModelDuration,
			Help:    "Model call duration, one attempt.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, []string{metric.LabelPolicy, "deployment"}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.failures, m.cooldowns, m.fallbacks, m.tokens, m.inflight, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// depMetrics are one deployment's hot-path series, resolved once (no label hashing per call).
type depMetrics struct {
	ok            prometheus.Counter
	duration      prometheus.Observer
	input, output prometheus.Counter
}

func (m *Metrics) forDeployment(policy, dep string) *depMetrics {
	if m == nil {
		return nil
	}
	return &depMetrics{ok: m.calls.WithLabelValues(policy, dep, "success"), duration: m.duration.WithLabelValues(policy, dep),
		input: m.tokens.WithLabelValues(policy, dep, "input"), output: m.tokens.WithLabelValues(policy, dep, "output")}
}

func (m *Metrics) forPolicy(policy string) prometheus.Gauge {
	if m == nil {
		return nil
	}
	return m.inflight.WithLabelValues(policy)
}

func (dm *depMetrics) success(d time.Duration, u Usage) {
	if dm == nil {
		return
	}
	dm.ok.Inc()
	dm.duration.Observe(d.Seconds())
	dm.input.Add(float64(u.InputTokens))
	dm.output.Add(float64(u.OutputTokens))
}

func (m *Metrics) failure(policy, dep, class string, d time.Duration, cooled bool) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(policy, dep, "failure").Inc()
	m.failures.WithLabelValues(policy, dep, class).Inc()
	m.duration.WithLabelValues(policy, dep).Observe(d.Seconds())
	if cooled {
		m.cooldowns.WithLabelValues(policy, dep).Inc()
	}
}

func (m *Metrics) fallback(from, to, reason string) {
	if m == nil {
		return
	}
	m.fallbacks.WithLabelValues(from, to, reason).Inc()
}

// Router attributes beside the GenAI conventions' own (runtime/telemetry/genai).
const (
	attrPolicy     = "fleet.model.policy"
	attrDeployment = "fleet.model.deployment"
)

// startSpan opens the GenAI client span "chat {model}" for one attempt.
func (r *Router) startSpan(ctx context.Context, g *group, d *deployment, req *Request) (context.Context, trace.Span) {
	if !r.tracing {
		return ctx, noopSpan
	}
	attrs := []attribute.KeyValue{
		genai.Chat,
		semconv.GenAIProviderNameKey.String(d.Provider.System()),
		semconv.GenAIRequestModel(d.Model),
		attribute.String(attrPolicy, g.p.Name),
		attribute.String(attrDeployment, d.Name),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	return r.tracer.Start(ctx, genai.SpanName(genai.Chat, d.Model), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// noopSpan is what an untraced router "opens": no allocation per call.
var noopSpan = noop.Span{}

func endSpan(span trace.Span, resp *Response, class string, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if resp != nil {
		span.SetAttributes(
			semconv.GenAIResponseModel(resp.Model),
			semconv.GenAIUsageInputTokens(resp.Usage.InputTokens),
			semconv.GenAIUsageOutputTokens(resp.Usage.OutputTokens),
			semconv.GenAIResponseFinishReasons(resp.StopReason),
		)
	}
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(class))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
