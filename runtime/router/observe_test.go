package router_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetc/fleetc/runtime/router"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

func TestGenAISpansAndMetrics(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := prometheus.NewRegistry()
	m, err := router.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	down := rt.Bedrock(t, rt.Always(rt.Reply{Status: 503, ErrorCode: "ServiceUnavailableException"}))
	spare := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "ok", Usage: router.Usage{InputTokens: 30, OutputTokens: 7}}))
	r, _ := router.New([]router.Policy{
		pol("fast", rt.BedrockProvider(down), "us.anthropic.claude-haiku-4-5", func(p *router.Policy) { p.Fallbacks = []string{"overflow"}; p.Retries = 0; p.AllowedFails = 0 }),
		pol("overflow", rt.OpenAIProvider(spare, ""), "gpt-4o-mini", nil),
	}, router.Options{Tracer: tp, Metrics: m})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "step")
	if _, err := r.Chat(ctx, "fast", ask("x")); err != nil {
		t.Fatal(err)
	}
	parent.End()

	var chats []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), "chat ") {
			chats = append(chats, s)
		}
	}
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2 (failed primary, fallback)", len(chats))
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		out := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			out[kv.Key] = kv.Value
		}
		return out
	}
	fail, ok := chats[0], chats[1]
	if fail.Name() != "chat us.anthropic.claude-haiku-4-5" || fail.SpanKind() != trace.SpanKindClient || fail.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("primary span %q kind %v", fail.Name(), fail.SpanKind())
	}
	fa := attrs(fail)
	if fa["gen_ai.provider.name"].AsString() != "aws.bedrock" || fa["gen_ai.operation.name"].AsString() != "chat" || fa["error.type"].AsString() != "retryable" || fail.Status().Code.String() != "Error" {
		t.Fatalf("primary span attributes %v status %v", fa, fail.Status())
	}
	oa := attrs(ok)
	if ok.Name() != "chat gpt-4o-mini" || oa["gen_ai.provider.name"].AsString() != "openai" || oa["gen_ai.usage.input_tokens"].AsInt64() != 30 ||
		oa["gen_ai.usage.output_tokens"].AsInt64() != 7 || oa["gen_ai.response.model"].AsString() != "gpt-4o-mini" ||
		oa["gen_ai.request.model"].AsString() != "gpt-4o-mini" || oa["fleet.model.policy"].AsString() != "overflow" || oa["gen_ai.request.max_tokens"].AsInt64() != 64 {
		t.Fatalf("fallback span attributes %v", oa)
	}

	checks := []struct {
		name   string
		labels prometheus.Labels
		want   float64
	}{
		{metric.ModelCalls, prometheus.Labels{"policy": "fast", "deployment": "fast/us.anthropic.claude-haiku-4-5", "outcome": "failure"}, 1},
		{metric.ModelCalls, prometheus.Labels{"policy": "overflow", "deployment": "overflow/gpt-4o-mini", "outcome": "success"}, 1},
		{metric.ModelFailures, prometheus.Labels{"policy": "fast", "deployment": "fast/us.anthropic.claude-haiku-4-5", "class": "retryable"}, 1},
		{metric.ModelCooldowns, prometheus.Labels{"policy": "fast", "deployment": "fast/us.anthropic.claude-haiku-4-5"}, 1},
		{metric.ModelFallbacks, prometheus.Labels{"policy": "fast", "to": "overflow", "reason": "failure"}, 1},
		{metric.ModelTokens, prometheus.Labels{"policy": "overflow", "deployment": "overflow/gpt-4o-mini", "type": "input"}, 30},
		{metric.ModelInFlight, prometheus.Labels{"policy": "overflow"}, 0},
	}
	families, _ := reg.Gather()
	for _, c := range checks {
		found := false
		for _, f := range families {
			if f.GetName() != c.name {
				continue
			}
			for _, mt := range f.GetMetric() {
				match := true
				for _, lp := range mt.GetLabel() {
					if c.labels[lp.GetName()] != lp.GetValue() {
						match = false
					}
				}
				if !match {
					continue
				}
				found = true
				v := mt.GetCounter().GetValue()
				if mt.GetGauge() != nil {
					v = mt.GetGauge().GetValue()
				}
				if v != c.want {
					t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s%v missing", c.name, c.labels)
		}
	}
	if n := testutil.CollectAndCount(reg, metric.ModelDuration); n != 2 {
		t.Errorf("%s series = %d, want 2", metric.ModelDuration, n)
	}
}

// A streamed call is accounted like a whole one: its span carries the streamed usage and
// stop reason, the token counters and the token bucket are charged with it.
func TestStreamedCallsAreAccounted(t *testing.T) {
	for _, kind := range []string{"bedrock", "openai"} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		reg := prometheus.NewRegistry()
		m, _ := router.NewMetrics(reg)
		var p router.Provider
		reply := rt.Always(rt.Reply{Text: "streamed", Usage: router.Usage{InputTokens: 41, OutputTokens: 9}})
		if kind == "bedrock" {
			p = rt.BedrockProvider(rt.Bedrock(t, reply))
		} else {
			p = rt.OpenAIProvider(rt.OpenAI(t, "", reply), "")
		}
		r, _ := router.New([]router.Policy{pol("p", p, "m", func(p *router.Policy) { p.TokensPerMinute = 45 })}, router.Options{Tracer: tp, Metrics: m})
		var events int
		resp, err := r.ChatStream(context.Background(), "p", ask("x"), func(router.StreamEvent) error { events++; return nil })
		if err != nil || resp.Text() != "streamed" || resp.Usage.Total() != 50 || events != 6 {
			t.Fatalf("%s: %+v %v after %d events", kind, resp, err, events)
		}
		want := `
# HELP fleet_model_tokens_total Tokens reported by providers, by type (input, output).
# TYPE fleet_model_tokens_total counter
fleet_model_tokens_total{deployment="p/m",policy="p",type="input"} 41
fleet_model_tokens_total{deployment="p/m",policy="p",type="output"} 9
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metric.ModelTokens); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("%s: %d spans", kind, len(spans))
		}
		var in, out int64
		var finish []string
		for _, kv := range spans[0].Attributes() {
			switch kv.Key {
			case "gen_ai.usage.input_tokens":
				in = kv.Value.AsInt64()
			case "gen_ai.usage.output_tokens":
				out = kv.Value.AsInt64()
			case "gen_ai.response.finish_reasons":
				finish = kv.Value.AsStringSlice()
			}
		}
		if in != 41 || out != 9 || len(finish) != 1 || finish[0] != router.StopEndTurn {
			t.Errorf("%s: span usage %d/%d finish %v", kind, in, out, finish)
		}
		// 50 tokens charged against a budget of 45 per minute: the next call waits past
		// a short deadline, so it fails without reaching the provider.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = r.ChatStream(ctx, "p", ask("x"), func(router.StreamEvent) error { return nil })
		cancel()
		if err == nil {
			t.Errorf("%s: the streamed usage was not charged to the token bucket", kind)
		}
	}
}

// The call-duration histogram's bucket bounds are part of the metric: dashboards and alerts
// select them by value (le="10" is "answered within 10 s"), so a moved bound silently empties
// their series. The bounds span a fast answer (50 ms) to the longest model call (5 min).
func TestDurationBucketsAreStable(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := router.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := router.New([]router.Policy{pol("p", rt.OpenAIProvider(rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "ok"})), ""), "m", nil)}, router.Options{Metrics: m})
	if _, err := r.Chat(context.Background(), "p", ask("x")); err != nil {
		t.Fatal(err)
	}
	families, _ := reg.Gather()
	var bounds []float64
	for _, f := range families {
		if f.GetName() == metric.ModelDuration {
			for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
	}
	want := []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	if !slices.Equal(bounds, want) {
		t.Errorf("%s buckets %v, want %v", metric.ModelDuration, bounds, want)
	}
}
