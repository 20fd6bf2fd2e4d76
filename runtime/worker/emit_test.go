package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/wire"
)

func contractWorker(schema string, carry, fields []string) *Worker {
	return &Worker{Cfg: &config.Config{File: config.File{Class: "c", Events: config.Events{FillOrder: []string{config.FillWorker, config.FillOutput, config.FillCarried}, Emits: []config.Emit{{
		DetailType: "x.done", Source: "s", Version: 1,
		Detail: config.EmitDetail{Carry: carry, WorkerFields: fields, Schema: config.Document(schema)},
	}}}}}}
}

// A schema the worker cannot compile stops it at start, with the event named.
func TestCompileContractsRefusesBadSchema(t *testing.T) {
	w := contractWorker(`{"type": 5}`, nil, nil)
	if err := w.CompileContracts(); err == nil || !strings.Contains(err.Error(), "x.done") {
		t.Fatalf("CompileContracts = %v, want an error naming the event", err)
	}
	w = contractWorker(`{"properties": {"a": {"$ref": "https://example.com/s.json"}}}`, nil, nil)
	if err := w.CompileContracts(); err == nil {
		t.Fatal("a remote $ref compiled")
	}
}

// Every violation is reported with its place in the detail; carried fields absent from the
// input stay absent (and are then reported as missing), and nothing undeclared is written.
func TestCompletionEntriesReportEveryViolation(t *testing.T) {
	w := contractWorker(`{"type":"object","additionalProperties":false,"required":["trace_id","conv","agent_class"],
		"properties":{"trace_id":{"type":"string"},"conv":{"type":"string"},"agent_class":{"type":"integer"},"result":{"type":"object"}}}`,
		[]string{"conv"}, []string{"agent_class", "result", "trace_id"})
	env := &wire.Envelope{TraceID: "t1", Detail: json.RawMessage(`{"trace_id":"t1","other":1}`)}
	_, err := w.completionEntries(context.Background(), env, storedResult{Result: json.RawMessage(`[1]`)})
	if !errors.Is(err, errContract) {
		t.Fatalf("err = %v, want a contract violation", err)
	}
	for _, want := range []string{"detail/agent_class", "detail/result", "conv"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not mention %s", err, want)
		}
	}
	env.Detail = json.RawMessage(`{"trace_id":"t1","conv":"c9","other":1}`)
	w = contractWorker(`{"type":"object","additionalProperties":false,"properties":{"trace_id":{},"conv":{},"result":{}}}`,
		[]string{"conv"}, []string{"result", "trace_id"})
	entries, err := w.completionEntries(context.Background(), env, storedResult{Result: json.RawMessage(`{"ok":true}`)})
	if err != nil || len(entries) != 1 {
		t.Fatalf("%v %v", entries, err)
	}
	if got := string(entries[0].Detail); got != `{"conv":"c9","result":{"ok":true},"trace_id":"t1"}` {
		t.Errorf("detail %s", got)
	}
}
