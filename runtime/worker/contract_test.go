package worker_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// closedContract is agent.step.completed with additionalProperties: false, as a user would
// write it: conversation_id is carried over from the request, the result's pad is short.
const closedContract = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["trace_id", "conversation_id", "agent_class"],
  "properties": {
    "trace_id": {"type": "string"},
    "conversation_id": {"type": "string"},
    "agent_class": {"type": "string"},
    "result": {"type": "object", "properties": {"pad": {"type": "string", "maxLength": 100}}},
    "result_ref": {"type": "object"}
  }
}`

// Completion events keep their contract end to end on kumo: with a closed schema, a good
// output is published with exactly the declared fields (conversation_id carried over from a
// standard queue's request, no traceparent in the detail); an output that breaks the schema
// is dead-lettered once with EventContractViolation and the schema error, never published.
func TestCompletionEventContract(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	kumotest.Require(t)
	bus := kumotest.Name(t, "bus")
	var schema map[string]any
	if err := json.Unmarshal([]byte(closedContract), &schema); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{heartbeat: 1, bus: bus, detail: map[string]any{
		"carry": []string{"conversation_id"}, "worker_fields": []string{"agent_class", "result", "trace_id"}, "schema": schema,
	}})
	sink := completionSink(t, bus)
	e.send(envelope("evt-good", stepSpec{TraceID: "good", ConversationID: "conv-1"}), "")
	e.send(envelope("evt-bad", stepSpec{TraceID: "bad", ConversationID: "conv-2", PadBytes: 200}), "")
	e.startWorker(5 * time.Second)

	var events []json.RawMessage
	var dead []dlqMessage
	deadline := time.Now().Add(30 * time.Second)
	for (len(events) < 1 || len(dead) < 1) && time.Now().Before(deadline) {
		events = append(events, drainSinkRaw(t, e, sink)...)
		dead = append(dead, e.drainDLQ()...)
	}
	time.Sleep(2 * time.Second) // a late second copy of either would show now
	events = append(events, drainSinkRaw(t, e, sink)...)
	dead = append(dead, e.drainDLQ()...)

	if len(events) != 1 {
		t.Fatalf("%d completion events, want 1 (the good step's): %s", len(events), events)
	}
	var ev struct {
		Detail json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(events[0], &ev); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, closedContract, ev.Detail); err != nil {
		t.Errorf("published detail breaks its contract: %v\n%s", err, ev.Detail)
	}
	var got map[string]json.RawMessage
	_ = json.Unmarshal(ev.Detail, &got)
	if string(got["conversation_id"]) != `"conv-1"` || string(got["trace_id"]) != `"good"` || string(got["agent_class"]) != `"researcher"` || got["result"] == nil {
		t.Errorf("detail %s: want conversation_id, trace_id, agent_class and result", ev.Detail)
	}
	if _, ok := got["traceparent"]; ok {
		t.Errorf("traceparent written into a detail whose schema does not declare it: %s", ev.Detail)
	}
	if len(dead) != 1 || dead[0].Key != "bad" || dead[0].Code != string(wire.EventContractViolation) {
		t.Fatalf("dead letters %+v, want one for bad with %s", dead, wire.EventContractViolation)
	}
	if msg := dead[0].Message; !strings.Contains(msg, "detail/result/pad") || !strings.Contains(msg, "100") {
		t.Errorf("dead letter does not carry the schema error: %q", msg)
	}
	t.Logf("dead letter: %s: %s", dead[0].Code, dead[0].Message)
	if st := e.record("bad"); st != "" {
		t.Errorf("contract violation left the idempotency record %q; want it released", st)
	}
	if st := e.record("good"); st != "done" {
		t.Errorf("good step record %q, want done", st)
	}
}

func drainSinkRaw(t *testing.T, e *env, url string) []json.RawMessage {
	var out []json.RawMessage
	for _, c := range drainSinkBodies(t, e, url) {
		out = append(out, json.RawMessage(c))
	}
	return out
}

func validate(t *testing.T, schema string, doc []byte) error {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///s.json", strings.NewReader(schema)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return s.Validate(v)
}

// The detail schemas fleetc writes into the example fleets' runtime configs compile in the
// worker (a schema it cannot compile would stop it at start).
func TestGoldenContractsCompile(t *testing.T) {
	paths, err := filepath.Glob("../../compiler/testdata/golden/*/runtime/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden runtime configs: %v", err)
	}
	for _, p := range paths {
		cfg, err := config.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := (&worker.Worker{Cfg: cfg}).CompileContracts(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
