package verifytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Draft07Instance checks that schema is a valid JSON Schema draft-07 document (against the
// draft-07 metaschema, $schema naming draft-07) and that instance validates against it. The
// workflow input schemas (statemachines/<wf>.input.schema.json) are draft-07: what most
// clients that build a StartExecution input can read.
func Draft07Instance(schema, instance []byte) error {
	var doc map[string]any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return fmt.Errorf("draft-07 schema: not JSON: %w", err)
	}
	if s := doc["$schema"]; s != "http://json-schema.org/draft-07/schema#" {
		return fmt.Errorf("draft-07 schema: $schema is %v, want http://json-schema.org/draft-07/schema#", s)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft7
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote $ref %q refused: schemas must be standalone (offline)", u)
	}
	if err := c.AddResource(schemaURL, bytes.NewReader(schema)); err != nil {
		return fmt.Errorf("draft-07 schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return fmt.Errorf("draft-07 schema: %s", detailed(err))
	}
	dec := json.NewDecoder(bytes.NewReader(instance))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("draft-07 instance: not JSON: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("draft-07 instance: %s", detailed(err))
	}
	return nil
}
