package dev

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/ir"
)

func research(t *testing.T) (*ir.Fleet, map[string]*Contract) {
	t.Helper()
	_, f, ds := compiler.Load("../../../examples/research-fleet/fleet.yaml")
	if f == nil || ds.HasErrors() {
		t.Fatalf("research example does not load: %v", ds)
	}
	cs, err := Contracts(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, cs
}

func TestNewEventChecksTheGeneratedSchema(t *testing.T) {
	f, cs := research(t)
	_, err := NewEvent(f, cs, "agent.step.requested", []byte(`{"trace_id":"t1","conversation_id":"","step":"one"}`))
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want a SchemaError, got %v", err)
	}
	want := []string{
		"detail /: missing properties: 'agent_class'",
		"detail /conversation_id: length must be >= 1, but got 0",
		"detail /step: expected integer, but got string",
	}
	if strings.Join(se.Problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(se.Problems, "\n"), strings.Join(want, "\n"))
	}

	ev, err := NewEvent(f, cs, "agent.step.requested", []byte(`{"trace_id":"t1","conversation_id":"c","step":2,"agent_class":"coder"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Bus != "research-fleet" || ev.Source != "fleet.coordinator" || ev.DetailType != "agent.step.requested" || ev.TraceID != "t1" {
		t.Errorf("event = %+v", ev)
	}
}

func TestNewEventExampleGetsAFreshTraceID(t *testing.T) {
	f, cs := research(t)
	a, err := NewEvent(f, cs, "agent.step.requested", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewEvent(f, cs, "agent.step.requested", nil)
	if len(a.TraceID) != 32 || a.TraceID == b.TraceID {
		t.Errorf("trace ids %q %q: want two fresh 32-hex ids", a.TraceID, b.TraceID)
	}
	var d map[string]any
	_ = json.Unmarshal(a.Detail, &d)
	if d["trace_id"] != a.TraceID || d["agent_class"] != "agent_class-example" {
		t.Errorf("detail = %s", a.Detail)
	}
	if _, err := NewEvent(f, cs, "agent.step.requestd", nil); err == nil || !strings.Contains(err.Error(), "agent.step.completed, agent.step.requested") {
		t.Errorf("unknown event: %v", err)
	}
	if _, err := NewEvent(f, cs, "agent.step.requested", []byte(`{} {}`)); err == nil {
		t.Error("two JSON values accepted")
	}
}
