package compiler_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/worker"
)

// TestEmittedDetailsKeepTheirContracts is a table over every example and every event each
// class emits: the detail fleet-worker builds (worker.BuildDetail, the one fill rule, from the
// class's generated runtime config) out of a recorded consumed detail (the consumed event's
// generated example, or the workflow's example input) and a handler result (an example of the
// class's output, which the worker's output check accepts; {} for classes without output)
// validates against the event's generated registry schema (draft-04).
func TestEmittedDetailsKeepTheirContracts(t *testing.T) {
	for _, path := range examples(t) {
		name := filepath.Base(filepath.Dir(path))
		env := irtest.FirstEnvOf(path)
		_, fleet, ds := compiler.LoadEnv(path, env)
		if fleet == nil || ds.HasErrors() {
			t.Fatalf("%s: %v", path, ds)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		set := buildEach(t, path, src)[env]
		for _, a := range fleet.Agents {
			if len(a.Emits) == 0 {
				continue
			}
			raw, _ := set.Get(a.ConfigPath)
			cfg, err := config.Parse(a.ConfigPath, raw)
			if err != nil {
				t.Fatal(err)
			}
			w := &worker.Worker{Cfg: cfg}
			if err := w.CompileContracts(); err != nil {
				t.Fatal(err)
			}
			result := json.RawMessage(`{}`)
			if a.Output != nil {
				v, err := eventschema.ExampleOf(a.Output)
				if err != nil {
					t.Fatal(err)
				}
				result, _ = json.Marshal(v)
				if why := w.CheckOutput(result); why != "" {
					t.Fatalf("%s/%s: the example result %s does not pass the worker's output check: %s", name, a.Name, result, why)
				}
			}
			for _, consumed := range recordedInputs(t, set, a) {
				for _, e := range cfg.Events.Emits {
					detail := worker.BuildDetail(cfg.Events.FillOrder, e.Detail, worker.Fill{
						Class: a.Name, TraceID: "trace-1", Consumed: consumed, Result: result, Fields: worker.OutputFields(cfg, result),
					})
					if err := validateEvent(set, e.DetailType, detail); err != nil {
						d, _ := json.Marshal(detail)
						t.Errorf("%s: class %s emits %s with detail %s, which breaks its registry schema: %v", name, a.Name, e.DetailType, d, err)
					}
				}
			}
		}
	}
}

// recordedInputs are the consumed details of a class: its event's example, and the example
// input of each workflow it is a step of.
func recordedInputs(t *testing.T, set *artifact.Set, a *ir.Agent) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	decode := func(b []byte) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if a.Consumes != nil && a.Consumes.Event != nil {
		b, ok := set.Get(eventschema.ExamplePath(a.Consumes.Event))
		if !ok {
			t.Fatalf("no example of %s", a.Consumes.Event.DetailType)
		}
		var ev struct {
			Detail json.RawMessage `json:"detail"`
		}
		_ = json.Unmarshal(b, &ev)
		out = append(out, decode(ev.Detail))
	}
	for _, w := range a.Workflows {
		if b, ok := set.Get("statemachines/" + w.Name + ".input.example.json"); ok {
			out = append(out, decode(b))
		}
	}
	if len(out) == 0 {
		t.Fatalf("class %s emits events but receives no work", a.Name)
	}
	return out
}

// validateEvent puts detail into the event's generated example envelope and validates it
// against the generated draft-04 schema.
func validateEvent(set *artifact.Set, detailType string, detail map[string]any) error {
	schema, _ := set.Get("schemas/" + detailType + ".json")
	example, _ := set.Get("schemas/examples/" + detailType + ".json")
	var ev map[string]any
	if err := json.Unmarshal(example, &ev); err != nil {
		return err
	}
	ev["detail"] = detail
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft4
	if err := c.AddResource("mem:///event.json", bytes.NewReader(schema)); err != nil {
		return err
	}
	s, err := c.Compile("mem:///event.json")
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return s.Validate(v)
}
