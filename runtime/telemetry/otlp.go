package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLPExporter returns an OTLP/HTTP span exporter when the standard OpenTelemetry
// environment names a collector (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; headers, protocol paths and TLS follow the same
// variables), and nil when it does not: spans are then created, linked and logged, but
// not shipped.
func OTLPExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	return otlptracehttp.New(ctx)
}
