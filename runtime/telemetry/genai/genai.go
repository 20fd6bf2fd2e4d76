// Package genai names fleet-worker's agent spans as the OpenTelemetry GenAI semantic
// conventions do (semconv v1.37.0, the version whose attribute constants the otel module
// ships): "invoke_agent {class}" per step, "execute_tool {tool}" per tool call and
// "chat {model}" per model call, with the gen_ai.* attributes a GenAI-aware backend groups
// conversations and tool calls by. The attribute keys are the library's constants; this
// package only adds the span names and the two starters every caller shares.
package genai

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Operations (gen_ai.operation.name), each also the first word of its span's name.
var (
	InvokeAgent = semconv.GenAIOperationNameInvokeAgent
	ExecuteTool = semconv.GenAIOperationNameExecuteTool
	Chat        = semconv.GenAIOperationNameChat
)

// ToolTypeFunction is gen_ai.tool.type of a tool the model calls with JSON arguments.
const ToolTypeFunction = "function"

// InstrumentationScope is the tracer name of the spans this package starts.
const InstrumentationScope = "github.com/fleetc/fleetc/runtime/telemetry/genai"

// SpanName is "{gen_ai.operation.name} {target}": the agent, tool or model.
func SpanName(op attribute.KeyValue, target string) string {
	return op.Value.AsString() + " " + target
}

// AgentAttributes are the gen_ai.* attributes of a step's invoke_agent span: the class is
// the agent, and the conversation id threads a conversation's steps together.
func AgentAttributes(class, conversationID string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{InvokeAgent, semconv.GenAIAgentName(class)}
	if conversationID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(conversationID))
	}
	return attrs
}

// StartTool opens the execute_tool span of one tool call as a child of ctx's span, on
// tp (nil: the provider of ctx's span, so a handler needs no tracer of its own; with no
// span in ctx nothing is recorded). callID is the model's tool-call id ("" when the
// transport has none).
func StartTool(ctx context.Context, tp trace.TracerProvider, tool, callID string) (context.Context, trace.Span) {
	if tp == nil {
		tp = trace.SpanFromContext(ctx).TracerProvider()
	}
	attrs := []attribute.KeyValue{ExecuteTool, semconv.GenAIToolName(tool), semconv.GenAIToolType(ToolTypeFunction)}
	if callID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(callID))
	}
	return tp.Tracer(InstrumentationScope).Start(ctx, SpanName(ExecuteTool, tool),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// EndTool ends a tool span; a failed call carries error.type (errType, e.g. the tool's
// error code) and the message.
func EndTool(span trace.Span, errType, message string) {
	if errType != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, message)
	}
	span.End()
}
