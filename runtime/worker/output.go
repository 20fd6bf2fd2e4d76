package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// outputErrorMax bounds the schema error kept in a HandlerOutputInvalid reason.
const outputErrorMax = 1024

// compileOutputSchema compiles the class's output schema like an event's detail schema.
func compileOutputSchema(class string, raw []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote $ref %q not allowed in an output contract", u)
	}
	url := "fleetc:///classes/" + class + ".output.json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("class %s: output schema: %w", class, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("class %s: output schema: %w", class, err)
	}
	return s, nil
}

// CheckOutput holds a handler result to the class's output contract (nil when the class
// declares none): the reason it does not fit, or "". CompileContracts must have run.
func (w *Worker) CheckOutput(out json.RawMessage) string {
	o := w.Cfg.Output
	if o == nil || w.outputSchema == nil {
		return ""
	}
	if len(out) > o.MaxBytes {
		return fmt.Sprintf("the result is %d bytes, above output.max_bytes %d", len(out), o.MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "the result is not one JSON value"
	}
	err := w.outputSchema.Validate(v)
	if err == nil {
		return ""
	}
	return truncate("the result does not fit the class's output schema: "+schemaProblems(err, "result"), outputErrorMax)
}

// outputInvalid is HandlerOutputInvalid for a handler failure that means "no usable answer"
// (not JSON, too large to capture) when the class declares its output; other errors pass.
func (w *Worker) outputInvalid(err error) (string, bool) {
	var re *retry.Error
	if w.Cfg.Output == nil || !errors.As(err, &re) {
		return "", false
	}
	switch re.Code {
	case wire.BadOutput, wire.OutputTooLarge:
		return truncate(re.Message, outputErrorMax), true
	}
	return "", false
}

// OutputFields are the result's top-level properties that some emitted event fills from it
// (emit from_output): kept beside the result so a claim-checked result still fills them.
func OutputFields(cfg *config.Config, out json.RawMessage) map[string]json.RawMessage {
	var names []string
	for _, e := range cfg.Events.Emits {
		names = append(names, e.Detail.FromOutput...)
	}
	if len(names) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(out, &obj) != nil {
		return nil
	}
	fields := map[string]json.RawMessage{}
	for _, k := range names {
		if v, ok := obj[k]; ok {
			fields[k] = v
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// schemaProblems lists a validation error's leaves as "<root><pointer>: message", sorted.
func schemaProblems(err error, root string) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var problems []string
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			problems = append(problems, root+e.InstanceLocation+": "+e.Message)
		}
		for _, c := range e.Causes {
			leaves(c)
		}
	}
	leaves(ve)
	slices.Sort(problems)
	problems = slices.Compact(problems)
	if len(problems) == 0 {
		return ve.Error()
	}
	return strings.Join(problems, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
