// Package dev runs a fleet on one machine: `fleetc send` puts a checked event on the
// fleet's bus, and `fleetc dev` applies the fleet to a local AWS emulator, runs one
// fleet-worker per class and serves a live page with the fleet's queues and faults on demand.
package dev

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/compiler/ir"
)

// traceField is the detail field every fleetc worker reads its trace id from.
const traceField = "trace_id"

// Event is one event checked against its generated schema, ready for PutEvents.
type Event struct {
	Bus, Source, DetailType string
	Detail                  json.RawMessage
	TraceID                 string // detail.trace_id ("" when the event has none)
}

// Contract is an event's generated schema (the EventBridge envelope, draft-04) and example.
type Contract struct {
	Event   *ir.Event
	Schema  []byte
	Example json.RawMessage // the example's detail; nil when none could be generated
}

// Contracts generates the schema and example of every event of f, by detail-type (for a
// command that has the fleet only; fleetc dev reads them from its compiled files).
func Contracts(f *ir.Fleet) (map[string]*Contract, error) {
	files, ds := eventschema.Generate(f)
	if ds.HasErrors() {
		return nil, fmt.Errorf("the event schemas do not generate: %v", ds[0])
	}
	set, err := artifact.NewSet(files...)
	if err != nil {
		return nil, err
	}
	return ContractsFrom(f, set), nil
}

// ContractsFrom reads the schema and example of every event of f, by detail-type, from the
// fleet's generated files.
func ContractsFrom(f *ir.Fleet, files *artifact.Set) map[string]*Contract {
	out := map[string]*Contract{}
	for _, e := range f.Events {
		schema, _ := files.Get(eventschema.SchemaPath(e))
		c := &Contract{Event: e, Schema: schema}
		if ex, ok := files.Get(eventschema.ExamplePath(e)); ok {
			var env struct {
				Detail json.RawMessage `json:"detail"`
			}
			if err := json.Unmarshal(ex, &env); err == nil {
				c.Example = env.Detail
			}
		}
		out[e.DetailType] = c
	}
	return out
}

// Names lists the detail-types of cs, sorted.
func Names(cs map[string]*Contract) []string {
	var n []string
	for k := range cs {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// NewEvent checks detail against the contract of detailType and returns the event to put
// on f's bus. A nil detail takes the generated example. A detail without trace_id, whose
// schema declares one, gets a fresh one (so does the example, whose trace id is a
// placeholder), so every event sent can be followed through the workers' logs.
func NewEvent(f *ir.Fleet, cs map[string]*Contract, detailType string, detail []byte) (*Event, error) {
	c, ok := cs[detailType]
	if !ok {
		return nil, fmt.Errorf("no event %q in fleet %s; its events: %s", detailType, f.Name, strings.Join(Names(cs), ", "))
	}
	example := detail == nil
	if example {
		if c.Example == nil {
			return nil, fmt.Errorf("event %s has no generated example (see fleetc build's warning); pass --detail", detailType)
		}
		detail = c.Example
	}
	dec := json.NewDecoder(bytes.NewReader(detail))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return nil, fmt.Errorf("the detail is not one JSON object: %v", firstErr(err, errors.New("trailing data")))
	}
	if declares(c.Event, traceField) {
		if t, _ := obj[traceField].(string); t == "" || example || t == exampleTrace(c) {
			obj[traceField] = NewTraceID()
		}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := checkEnvelope(f, c, raw); err != nil {
		return nil, err
	}
	trace, _ := obj[traceField].(string)
	return &Event{Bus: f.Bus.Name, Source: c.Event.Source, DetailType: detailType, Detail: raw, TraceID: trace}, nil
}

// exampleTrace is the placeholder trace id of the generated example ("" when none).
func exampleTrace(c *Contract) string {
	var ex map[string]any
	_ = json.Unmarshal(c.Example, &ex)
	t, _ := ex[traceField].(string)
	return t
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// declares reports whether the event's detail schema names property p.
func declares(e *ir.Event, p string) bool {
	props, _ := e.Detail["properties"].(map[string]any)
	_, ok := props[p]
	return ok
}

// NewTraceID returns a W3C trace id (32 hex digits), the shape the workers propagate.
func NewTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SchemaError is a detail that breaks its event's schema: every violation, by JSON pointer.
type SchemaError struct {
	DetailType string
	Problems   []string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the detail breaks the schema of %s (schemas/%s.json):\n  %s", e.DetailType, e.DetailType, strings.Join(e.Problems, "\n  "))
}

// checkEnvelope validates the detail inside the envelope EventBridge will deliver, against
// the very schema `fleetc build` writes and `fleetc schemas publish` registers.
func checkEnvelope(f *ir.Fleet, c *Contract, detail json.RawMessage) error {
	env := map[string]any{
		"version": "0", "id": eventschema.ExampleID, "detail-type": c.Event.DetailType,
		"source": c.Event.Source, "account": eventschema.ExampleAccount, "time": eventschema.ExampleTime,
		"region": f.Region, "resources": []any{}, "detail": detail,
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return err
	}
	err = eventschema.Validate(c.Schema, raw)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var problems []string
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := strings.TrimPrefix(e.InstanceLocation, "/detail")
			if loc == "" {
				loc = "/"
			}
			problems = append(problems, "detail "+loc+": "+e.Message)
		}
		for _, c := range e.Causes {
			leaves(c)
		}
	}
	leaves(ve)
	slices.Sort(problems)
	return &SchemaError{DetailType: c.Event.DetailType, Problems: slices.Compact(problems)}
}

// PutAPI is the part of the EventBridge client Put needs.
type PutAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Put puts ev on its bus and returns the event id EventBridge assigned.
func Put(ctx context.Context, api PutAPI, ev *Event) (string, error) {
	out, err := api.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(ev.Bus), Source: aws.String(ev.Source),
		DetailType: aws.String(ev.DetailType), Detail: aws.String(string(ev.Detail)),
	}}})
	if err != nil {
		return "", fmt.Errorf("PutEvents on bus %s: %w", ev.Bus, err)
	}
	if out.FailedEntryCount > 0 || len(out.Entries) != 1 || out.Entries[0].EventId == nil {
		code, msg := "", ""
		if len(out.Entries) == 1 {
			code, msg = aws.ToString(out.Entries[0].ErrorCode), aws.ToString(out.Entries[0].ErrorMessage)
		}
		return "", fmt.Errorf("PutEvents on bus %s refused the event: %s %s", ev.Bus, code, msg)
	}
	return aws.ToString(out.Entries[0].EventId), nil
}
