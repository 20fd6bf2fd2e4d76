package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetc/fleetc/runtime/internal/jsonkeystest"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

func newTel(t *testing.T, exp sdktrace.SpanExporter, sync bool) (*Telemetry, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	tel, err := New(Options{ServiceName: "research-researcher", Class: "researcher", LogWriter: &logs, SpanExporter: exp, SyncExport: sync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, &logs
}

func TestInjectExtractRoundTrip(t *testing.T) {
	tel, _ := newTel(t, nil, false)
	ctx, span := tel.tracer.Start(context.Background(), "producer")
	defer span.End()
	attrs := Inject(ctx)
	tp := attrs[AttrTraceparent]
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if tp != want {
		t.Fatalf("traceparent %q, want %q", tp, want)
	}
	got := trace.SpanContextFromContext(Extract(attrs, "ignored-when-traceparent-valid"))
	if !got.IsRemote() || got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("extracted %v", got)
	}
	if len(Inject(context.Background())) != 0 {
		t.Fatal("Inject without a span must be empty")
	}
}

func TestExtractDerivesFromTraceID(t *testing.T) {
	sum := sha256.Sum256([]byte("conv-8842-step-7"))
	wantTID := hex.EncodeToString(sum[:16])
	for _, attrs := range []map[string]string{nil, {AttrTraceparent: "garbage"}} {
		sc := trace.SpanContextFromContext(Extract(attrs, "conv-8842-step-7"))
		if sc.TraceID().String() != wantTID || sc.SpanID().String() != hex.EncodeToString(sum[16:24]) || !sc.IsSampled() || !sc.IsRemote() {
			t.Fatalf("attrs %v: derived %v, want trace %s", attrs, sc, wantTID)
		}
	}
	if DeriveTraceID("a") == DeriveTraceID("b") {
		t.Fatal("different trace ids collide")
	}
	if trace.SpanContextFromContext(Extract(nil, "")).IsValid() {
		t.Fatal("no traceparent and no trace id must give no span context")
	}
}

func TestXRayTraceHeader(t *testing.T) {
	ctx := Extract(map[string]string{AttrTraceparent: "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"}, "")
	if got, want := XRayTraceHeader(ctx), "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if XRayTraceHeader(context.Background()) != "" {
		t.Fatal("want empty header without span")
	}
}

func TestStepSpanLinkedToProducer(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, logs := newTel(t, exp, true)
	producer := "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
	ctx := Extract(map[string]string{AttrTraceparent: producer}, "conv-8842-step-7")
	ctx, step := tel.StartStep(ctx, StepInfo{TraceID: "conv-8842-step-7", MessageID: "m-1", WorkKey: "conv-8842-step-7", Attempt: 2, Source: "eventbridge", ConversationID: "conv-8842"})
	tel.Logger.InfoContext(ctx, "step started", "k", "v")
	step.End(OutcomeFailure, errors.New("handler exit 3"))
	step.End(OutcomeSuccess, nil) // ignored

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name != "invoke_agent researcher" || s.SpanKind != trace.SpanKindConsumer {
		t.Fatalf("span %s kind %v", s.Name, s.SpanKind)
	}
	if s.SpanContext.TraceID().String() != "5759e988bd862e3fe1be46a994272793" || s.Parent.SpanID().String() != "53995c3f42cd8ad8" {
		t.Fatalf("span not a child of the producer: trace %s parent %s", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID().String() != "53995c3f42cd8ad8" {
		t.Fatalf("links %v", s.Links)
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{"fleet.trace_id": "conv-8842-step-7", "messaging.message.id": "m-1", "fleet.attempt": "2", "fleet.outcome": OutcomeFailure, "fleet.class": "researcher",
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher", "gen_ai.conversation.id": "conv-8842"} {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	if s.Status.Description != "handler exit 3" {
		t.Fatalf("status %+v", s.Status)
	}

	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	for k, v := range map[string]string{
		"msg": "step started", LogTraceID: "conv-8842-step-7", LogOTelTraceID: "5759e988bd862e3fe1be46a994272793",
		LogSpanID: s.SpanContext.SpanID().String(), LogClass: "researcher", "service": "research-researcher", "k": "v", "level": "INFO",
	} {
		if line[k] != v {
			t.Errorf("log %s = %v, want %q (line %s)", k, line[k], v, logs.String())
		}
	}
}

// scrape fetches /metrics and returns the sample lines for our metrics.
func scrape(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || !(strings.HasPrefix(line, "agent_") || strings.HasPrefix(line, "aws_")) {
			continue
		}
		i := strings.LastIndex(line, " ")
		out[line[:i]] = line[i+1:]
	}
	return out
}

func TestMetricsEndpoint(t *testing.T) {
	tel, _ := newTel(t, nil, false)
	addr, err := tel.ServeMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr.String() + "/metrics"

	if got := scrape(t, url); got[`agent_steps_dead_lettered_total{class="researcher"}`] != "0" || got[`agent_step_retries_total{class="researcher"}`] != "0" {
		t.Fatalf("class counters not exported as 0 at start: %v", got)
	}
	_, s1 := tel.StartStep(context.Background(), StepInfo{TraceID: "a"})
	_, s2 := tel.StartStep(context.Background(), StepInfo{TraceID: "b"})
	tel.Metrics.CountAWSRequest("sqs", "ReceiveMessage")
	tel.Metrics.CountAWSRequest("sqs", "DeleteMessageBatch")
	tel.Metrics.CountAWSRequest("sqs", "DeleteMessageBatch")
	tel.Metrics.CountAWSRequest("eventbridge", "PutEvents")
	tel.Metrics.CountAWSRequest("s3", "")
	got := scrape(t, url)
	if got[`agent_steps_in_flight{class="researcher"}`] != "2" {
		t.Fatalf("in flight: %v", got)
	}
	s1.End(OutcomeRetry, errors.New("throttled"))
	s2.End(OutcomeDeadLetter, errors.New("poison"))
	got = scrape(t, url)
	for k, v := range map[string]string{
		`agent_steps_in_flight{class="researcher"}`:                                       "0",
		`agent_step_retries_total{class="researcher"}`:                                    "1",
		`agent_steps_dead_lettered_total{class="researcher"}`:                             "1",
		`agent_step_duration_seconds_count{class="researcher",outcome="retry"}`:           "1",
		`agent_step_duration_seconds_count{class="researcher",outcome="dead_letter"}`:     "1",
		`agent_step_duration_seconds_bucket{class="researcher",outcome="retry",le="0.1"}`: "1",
		`aws_api_requests_total{operation="ReceiveMessage",service="sqs"}`:                "1",
		`aws_api_requests_total{operation="DeleteMessageBatch",service="sqs"}`:            "2",
		`aws_api_requests_total{operation="PutEvents",service="eventbridge"}`:             "1",
		`aws_api_requests_total{operation="unknown",service="s3"}`:                        "1",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// Nothing leaks into the global default registry.
	mfs, _ := prometheus.DefaultGatherer.Gather()
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "agent_") || strings.HasPrefix(mf.GetName(), "aws_") {
			t.Fatalf("%s registered globally", mf.GetName())
		}
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("metrics server still up after Shutdown")
	}
}

// keepExporter keeps spans across Shutdown (tracetest's in-memory
// exporter clears itself on Shutdown, which would hide the flush).
type keepExporter struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (k *keepExporter) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	k.mu.Lock()
	k.spans = append(k.spans, s...)
	k.mu.Unlock()
	return nil
}

func (k *keepExporter) Shutdown(context.Context) error { return nil }

func TestShutdownFlushesBatchedSpans(t *testing.T) {
	exp := &keepExporter{}
	tel, _ := newTel(t, exp, false) // batched export (5 s default interval)
	for range 3 {
		_, s := tel.StartStep(context.Background(), StepInfo{TraceID: "x"})
		s.End(OutcomeSuccess, nil)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.spans
	if len(spans) != 3 {
		t.Fatalf("%d spans exported after Shutdown, want 3", len(spans))
	}
	// Same business trace id without traceparent → one OTel trace.
	if spans[0].SpanContext().TraceID() != DeriveTraceID("x") || spans[2].SpanContext().TraceID() != DeriveTraceID("x") {
		t.Fatal("steps of one trace_id did not share a trace")
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestMetricNamesAreValid(t *testing.T) {
	re := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	for _, n := range []string{metric.StepDuration, metric.StepsInFlight, metric.StepRetries, metric.StepsDeadLettered, metric.AWSRequests} {
		if !re.MatchString(n) {
			t.Errorf("bad metric name %q", n)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without service name accepted")
	}
}

// Every JSON log line has each key once, whatever the caller repeats: the logger's own
// service and class, slog's msg, a key given twice in one call, and a trace_id from both the
// context and the arguments. The first value wins.
func TestLogLinesHaveNoDuplicateKeys(t *testing.T) {
	tel, logs := newTel(t, nil, true)
	ctx := context.WithValue(context.Background(), traceIDKey{}, "t-ctx") // as StartStep stores it
	log := tel.Logger
	log.Info("verdict", "class", "researcher", "key", "k1", "trace_id", "t-arg", "key", "k2")
	log.InfoContext(ctx, "verdict", "trace_id", "t-arg", "msg", "shadow", "service", "other")
	log.With("class", "again", "extra", 1).With("extra", 2).Warn("with twice", "extra", 3)
	log.WithGroup("step").Info("grouped", "class", "inner", "class", "inner2")

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), logs)
	}
	for _, line := range lines {
		dups, err := jsonkeystest.Duplicates([]byte(line))
		if err != nil || len(dups) > 0 {
			t.Errorf("duplicate keys %v (%v) in %s", dups, err, line)
		}
	}
	var first, second, third, fourth map[string]any
	for i, dst := range []*map[string]any{&first, &second, &third, &fourth} {
		if err := json.Unmarshal([]byte(lines[i]), dst); err != nil {
			t.Fatal(err)
		}
	}
	if first["class"] != "researcher" || first["key"] != "k1" || first["trace_id"] != "t-arg" {
		t.Errorf("first value should win: %v", first)
	}
	if second["msg"] != "verdict" || second["service"] != "research-researcher" || second["trace_id"] != "t-arg" {
		t.Errorf("logger keys and earlier values should win: %v", second)
	}
	if third["class"] != "researcher" || third["extra"] != 1.0 {
		t.Errorf("With keys: %v", third)
	}
	if g, _ := fourth["step"].(map[string]any); g["class"] != "inner" || fourth["class"] != "researcher" {
		t.Errorf("a group is its own key space: %v", fourth)
	}
}

// Extract returns a context whose remote parent span is the producer's:
// from attrs["traceparent"] when valid, else a deterministic parent
// derived from traceID (the event's detail.trace_id) so every step of one
// business trace shares an OTel trace id even when no producer set a
// traceparent. With neither, it returns context.Background().
func Extract(attrs map[string]string, traceID string) context.Context {
	return ExtractInto(context.Background(), attrs, traceID)
}

// DeriveTraceID maps a business trace id to an OTel trace id: the first
// 16 bytes of its SHA-256.
func DeriveTraceID(traceID string) trace.TraceID {
	sum := sha256.Sum256([]byte(traceID))
	var id trace.TraceID
	copy(id[:], sum[:16])
	return id
}
