package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagator reads and writes W3C traceparent/tracestate.
var propagator = propagation.TraceContext{}

// Inject returns the W3C trace context of ctx's span as SQS message
// attributes ({"traceparent": ..., and "tracestate" when non-empty}), or
// an empty map when ctx carries no valid span.
func Inject(ctx context.Context) map[string]string {
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	return map[string]string(carrier)
}

// ExtractInto is Extract onto an existing context.
func ExtractInto(ctx context.Context, attrs map[string]string, traceID string) context.Context {
	if attrs[AttrTraceparent] != "" {
		out := propagator.Extract(ctx, propagation.MapCarrier(attrs))
		if trace.SpanContextFromContext(out).IsValid() {
			return out
		}
	}
	if traceID == "" {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, DerivedSpanContext(traceID))
}

// DerivedSpanContext is the synthetic, sampled remote parent used when a
// message has a trace_id but no traceparent: trace id from DeriveTraceID,
// span id from the next 8 bytes of the same hash.
func DerivedSpanContext(traceID string) trace.SpanContext {
	sum := sha256.Sum256([]byte(traceID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	if !sid.IsValid() { // all-zero span id is invalid; astronomically unlikely
		sid[7] = 1
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true,
	})
}

// XRayTraceHeader renders ctx's span as an AWS X-Ray trace header for
// PutEvents' TraceHeader ("Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=1"),
// or "" without a valid span.
func XRayTraceHeader(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	tid := sc.TraceID()
	sid := sc.SpanID()
	h := hex.EncodeToString(tid[:])
	sampled := "0"
	if sc.IsSampled() {
		sampled = "1"
	}
	return "Root=1-" + h[:8] + "-" + h[8:] + ";Parent=" + hex.EncodeToString(sid[:]) + ";Sampled=" + sampled
}
