// Package genjson is the one encoder of the JSON documents fleetc generates (state machine
// definitions, event schemas and examples, runtime configs), so every generated file has
// the same form: two-space indent, no HTML escaping (descriptions and patterns hold < > &,
// which must reach AWS as written), and a trailing newline.
package genjson

import (
	"bytes"
	"encoding/json"
)

// Encode renders v as a generated document. Map keys come out sorted (encoding/json); a type
// whose order is meaningful (ASL states in flow order) keeps it in its own MarshalJSON,
// built from Compact.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil { // Encode appends the trailing newline
		return nil, err
	}
	return b.Bytes(), nil
}

// Compact renders v on one line without HTML escaping or newline: a piece of a document
// that a MarshalJSON assembles.
func Compact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Canonical is Encode with keys sorted at every level, structs included, so the order of a
// Go type's fields cannot leak into the file (runtime configs). Numbers keep their text.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return Encode(generic)
}
