package verifytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// draft04URIs are the $schema values that mean draft-04 (EventBridge Schema Registry's
// JSONSchemaDraft4 type accepts nothing newer).
var draft04URIs = map[string]bool{
	"http://json-schema.org/draft-04/schema#":  true,
	"http://json-schema.org/draft-04/schema":   true,
	"https://json-schema.org/draft-04/schema#": true,
	"https://json-schema.org/draft-04/schema":  true,
}

const schemaURL = "mem:///schema.json"

// compileDraft04 compiles a schema as draft-04, which validates it against the draft-04
// metaschema. Remote $refs are refused: checks run offline and schemas must be standalone.
func compileDraft04(schema []byte) (*jsonschema.Schema, error) {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, fmt.Errorf("draft-04 schema: not JSON: %w", err)
	}
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"]; ok {
			str, _ := s.(string)
			if !draft04URIs[str] {
				return nil, fmt.Errorf("draft-04 schema: $schema is %v, want http://json-schema.org/draft-04/schema#", s)
			}
		}
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft4
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote $ref %q refused: schemas must be standalone (offline)", u)
	}
	if err := c.AddResource(schemaURL, bytes.NewReader(schema)); err != nil {
		return nil, fmt.Errorf("draft-04 schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("draft-04 schema: %s", detailed(err))
	}
	return sch, nil
}

// Draft04 checks that schema is a valid JSON Schema draft-04 document (against the draft-04
// metaschema), with $schema, if present, naming draft-04.
func Draft04(schema []byte) error {
	_, err := compileDraft04(schema)
	return err
}

// Draft04Instance checks schema as Draft04 does, then validates instance against it.
func Draft04Instance(schema, instance []byte) error {
	sch, err := compileDraft04(schema)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(instance))
	dec.UseNumber() // keep integers exact for multipleOf/maximum
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("draft-04 instance: not JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("draft-04 instance: trailing data after the JSON value")
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("draft-04 instance: %s", detailed(err))
	}
	return nil
}

// detailed renders jsonschema errors with every cause and its instance location.
func detailed(err error) string {
	switch e := err.(type) {
	case *jsonschema.ValidationError:
		return strings.TrimSpace(fmt.Sprintf("%#v", e))
	case *jsonschema.SchemaError:
		if ve, ok := e.Err.(*jsonschema.ValidationError); ok {
			return "not valid against the draft-04 metaschema: " + strings.TrimSpace(fmt.Sprintf("%#v", ve))
		}
	}
	return err.Error()
}
