package genai

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A tool span is a child of the span in ctx, on that span's provider, named and attributed
// as the GenAI conventions say; a failed call carries error.type and an error status.
func TestToolSpanUnderTheAgentSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, agent := tp.Tracer("test").Start(context.Background(), SpanName(InvokeAgent, "researcher"))
	_, ok := StartTool(ctx, nil, "start_cdk_synth", "call-1")
	EndTool(ok, "", "")
	_, bad := StartTool(ctx, nil, "get_cdk_synth_status", "")
	EndTool(bad, "NOT_FOUND", "unknown jobId")
	agent.End()

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	want := []struct {
		name   string
		attrs  map[string]string
		status codes.Code
	}{
		{"execute_tool start_cdk_synth", map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "start_cdk_synth", "gen_ai.tool.type": "function", "gen_ai.tool.call.id": "call-1"}, codes.Unset},
		{"execute_tool get_cdk_synth_status", map[string]string{"gen_ai.tool.name": "get_cdk_synth_status", "error.type": "NOT_FOUND"}, codes.Error},
	}
	for i, w := range want {
		s := spans[i]
		if s.Name != w.name || s.SpanKind != trace.SpanKindInternal || s.Parent.SpanID() != agent.SpanContext().SpanID() || s.Status.Code != w.status {
			t.Errorf("span %d: %s kind %v parent %s status %v", i, s.Name, s.SpanKind, s.Parent.SpanID(), s.Status)
		}
		got := map[string]string{}
		for _, kv := range s.Attributes {
			got[string(kv.Key)] = kv.Value.Emit()
		}
		for k, v := range w.attrs {
			if got[k] != v {
				t.Errorf("span %s: %s = %q, want %q", s.Name, k, got[k], v)
			}
		}
	}
	for _, kv := range spans[1].Attributes {
		if kv.Key == "gen_ai.tool.call.id" {
			t.Errorf("a call without an id has gen_ai.tool.call.id %q", kv.Value.Emit())
		}
	}
	// Without a span in ctx nothing is recorded.
	if _, s := StartTool(context.Background(), nil, "x", ""); s.IsRecording() {
		t.Error("a tool span without a parent span or provider records")
	}
}
