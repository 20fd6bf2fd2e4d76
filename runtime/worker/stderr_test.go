package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/fleetc/fleetc/runtime/handler"
)

// A handler's stderr reaches the worker's log line by line, with class, trace id and
// attempt, when the step succeeds.
func TestHandlerStderrIsLogged(t *testing.T) {
	var buf bytes.Buffer
	h, err := handler.NewExec([]string{"/bin/sh", "-c", `echo "looking up $FLEET_TRACE_ID" >&2; echo '{}'`})
	if err != nil {
		t.Fatal(err)
	}
	h.Stderr = StderrLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	if _, err := h.Handle(context.Background(), handler.Request{Class: "solver", TraceID: "tr-1", Attempt: 3}); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	if rec["msg"] != "handler stderr" || rec["class"] != "solver" || rec["trace_id"] != "tr-1" || rec["attempt"] != 3.0 || rec["line"] != "looking up tr-1" {
		t.Errorf("log record = %v", rec)
	}
}
