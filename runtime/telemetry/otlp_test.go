package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A step span reaches an OTLP/HTTP collector named by OTEL_EXPORTER_OTLP_ENDPOINT. No
// collector runs here, so an httptest server stands in for one and asserts the request the
// OTLP/HTTP spec defines: POST /v1/traces with a protobuf body.
func TestOTLPExporterShipsStepSpans(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.ContentLength == 0 {
			t.Errorf("unexpected OTLP request: %s %s %q (%d bytes)", r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.ContentLength)
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	exp, err := OTLPExporter(context.Background(), func(k string) string { return env[k] })
	if err != nil || exp == nil {
		t.Fatalf("exporter = %v, %v", exp, err)
	}
	tel, err := New(Options{ServiceName: "test-researcher", Class: "researcher", SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	_, step := tel.StartStep(context.Background(), StepInfo{TraceID: "conv-1-step-1", MessageID: "m-1", Attempt: 1})
	step.End(OutcomeSuccess, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no span reached the collector")
	}
	if exp, _ := OTLPExporter(context.Background(), func(string) string { return "" }); exp != nil {
		t.Error("an exporter without a configured collector")
	}
}
