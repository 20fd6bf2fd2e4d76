package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Completion events are built by one rule (docs/concepts.md "Completion events"), which the runtime
// config spells out per event (config.EmitDetail):
//
//   - carried fields: each name in carry is copied verbatim from the consumed detail (the
//     message's detail as delivered, or the workflow state input) when present there;
//   - worker fields, each only when listed in worker_fields: agent_class = the class,
//     trace_id = the step's trace id, traceparent = the step's W3C trace context, and result =
//     the handler's output, or result_ref when the output went to the claim-check bucket.
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
	var input map[string]json.RawMessage
	_ = json.Unmarshal(env.Detail, &input)
	traceparent := telemetry.Inject(ctx)[telemetry.AttrTraceparent]
	xray := telemetry.XRayTraceHeader(ctx)
	entries := make([]events.Entry, 0, len(w.contracts))
	for _, c := range w.contracts {
		detail := map[string]any{}
		for _, k := range c.emit.Detail.Carry {
			if v, ok := input[k]; ok {
				detail[k] = v
			}
		}
		for _, f := range c.emit.Detail.WorkerFields {
			switch f {
			case "agent_class":
				detail[f] = w.Cfg.Class
			case "trace_id":
				if env.TraceID != "" {
					detail[f] = env.TraceID
				}
			case "traceparent":
				if traceparent != "" {
					detail[f] = traceparent
				}
			case "result":
				if s.ResultRef != nil {
					detail["result_ref"] = s.ResultRef
				} else {
					detail["result"] = s.Result
				}
			}
		}
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
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: event %s: %v", errContract, c.emit.DetailType, err)
	}
	var problems []string
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			problems = append(problems, "detail"+e.InstanceLocation+": "+e.Message)
		}
		for _, c := range e.Causes {
			leaves(c)
		}
	}
	leaves(ve)
	slices.Sort(problems)
	problems = slices.Compact(problems)
	if len(problems) == 0 {
		problems = append(problems, ve.Error())
	}
	return fmt.Errorf("%w: event %s: %s", errContract, c.emit.DetailType, strings.Join(problems, "; "))
}
