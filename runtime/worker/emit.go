package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/runtime/claimcheck"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Completion events are built by one rule (docs/concepts.md "Completion events"), which the runtime
// config spells out as data: events.fill_order names the sources in precedence order, and
// each event's detail lists what each source fills (config.EmitDetail). A property takes its
// value from the first source that has one:
//
//   - worker: each field listed in worker_fields: agent_class = the class, trace_id = the
//     step's trace id, traceparent = the step's W3C trace context, and result = the handler's
//     output, or result_ref when the output went to the claim-check bucket;
//   - output: each name in from_output, from the handler result's top-level property;
//   - carried: each name in carry, copied verbatim from the consumed detail (the message's
//     detail as delivered, or the workflow state input).
//
// The detail is then checked against the event's schema; a detail that breaks it is never
// published.

// contract is one emitted event with its compiled detail schema.
type contract struct {
	emit   config.Emit
	schema *jsonschema.Schema
}

// errContract marks a detail that breaks its event's schema: no retry can fix it.
var errContract = errors.New("completion event breaks its contract")

// CompileContracts compiles the detail schema of every emitted event, once. NewRuntime calls
// it at start so that a schema the worker cannot use stops it before any message is touched;
// a Worker built in code compiles on first use.
func (w *Worker) CompileContracts() error {
	w.contractsOnce.Do(func() {
		if o := w.Cfg.Output; o != nil && len(o.Schema) > 0 {
			if w.outputSchema, w.contractsErr = compileOutputSchema(w.Cfg.Class, o.Schema); w.contractsErr != nil {
				return
			}
		}
		for _, e := range w.Cfg.Events.Emits {
			c := contract{emit: e}
			if len(e.Detail.Schema) > 0 {
				s, err := compileDetailSchema(e.DetailType, e.Detail.Schema)
				if err != nil {
					w.contractsErr = err
					return
				}
				c.schema = s
			}
			w.contracts = append(w.contracts, c)
		}
	})
	return w.contractsErr
}

// compileDetailSchema compiles a detail schema as fleetc reads it (draft 2020-12 unless the
// schema names its own $schema); refs resolve inside the schema only.
func compileDetailSchema(detailType string, raw []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote $ref %q not allowed in an event contract", u)
	}
	url := "fleetc:///events/" + detailType + ".detail.json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("event %s: detail schema: %w", detailType, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("event %s: detail schema: %w", detailType, err)
	}
	return s, nil
}

// completionEntries builds one entry per emitted event by the rule above and checks each
// detail against its schema (errContract when one breaks it). The step's trace context rides
// the entry's TraceHeader (X-Ray), and detail.traceparent only where the schema declares it.
func (w *Worker) completionEntries(ctx context.Context, env *wire.Envelope, s storedResult) ([]events.Entry, error) {
	if err := w.CompileContracts(); err != nil {
		return nil, fmt.Errorf("%w: %v", errContract, err)
	}
	in := Fill{Class: w.Cfg.Class, TraceID: env.TraceID, Traceparent: telemetry.Inject(ctx)[telemetry.AttrTraceparent],
		Result: s.Result, ResultRef: s.ResultRef, Fields: s.Fields}
	_ = json.Unmarshal(env.Detail, &in.Consumed)
	xray := telemetry.XRayTraceHeader(ctx)
	entries := make([]events.Entry, 0, len(w.contracts))
	for _, c := range w.contracts {
		detail := BuildDetail(w.Cfg.Events.FillOrder, c.emit.Detail, in)
		raw, err := json.Marshal(detail)
		if err != nil {
			return nil, err
		}
		if err := checkDetail(c, raw); err != nil {
			return nil, err
		}
		entries = append(entries, events.Entry{Source: c.emit.Source, DetailType: c.emit.DetailType, Detail: raw, TraceHeader: xray})
	}
	return entries, nil
}

// Fill is what a completion detail is built from.
type Fill struct {
	Class       string                     // agent_class
	TraceID     string                     // the step's trace id ("" = not written)
	Traceparent string                     // the step's W3C trace context ("" = not written)
	Consumed    map[string]json.RawMessage // the consumed detail (carried fields)
	Result      json.RawMessage            // the handler's result, when inline
	ResultRef   *claimcheck.Ref            // the result's claim check, when offloaded
	Fields      map[string]json.RawMessage // the result's top-level properties (OutputFields)
}

// BuildDetail applies the fill rule: for each source of order (events.fill_order), the
// properties that source fills, each set by the first source that has a value for it.
func BuildDetail(order []string, d config.EmitDetail, in Fill) map[string]any {
	detail := map[string]any{}
	set := func(k string, v any) {
		if _, done := detail[k]; !done {
			detail[k] = v
		}
	}
	for _, source := range order {
		switch source {
		case config.FillWorker:
			for _, f := range d.WorkerFields {
				switch f {
				case "agent_class":
					set(f, in.Class)
				case "trace_id":
					if in.TraceID != "" {
						set(f, in.TraceID)
					}
				case "traceparent":
					if in.Traceparent != "" {
						set(f, in.Traceparent)
					}
				case "result":
					if in.ResultRef != nil {
						set("result_ref", in.ResultRef)
					} else {
						set("result", in.Result)
					}
				}
			}
		case config.FillOutput:
			for _, k := range d.FromOutput {
				if v, ok := in.Fields[k]; ok {
					set(k, v)
				}
			}
		case config.FillCarried:
			for _, k := range d.Carry {
				if v, ok := in.Consumed[k]; ok {
					set(k, v)
				}
			}
		}
	}
	return detail
}

// checkDetail validates raw against the event's schema; the error lists every violation with
// its JSON pointer in the detail.
func checkDetail(c contract, raw []byte) error {
	if c.schema == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	err := c.schema.Validate(v)
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: event %s: %s", errContract, c.emit.DetailType, schemaProblems(err, "detail"))
}
