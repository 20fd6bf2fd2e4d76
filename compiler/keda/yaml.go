package keda

import (
	"bytes"
	"encoding/json"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
)

// toYAML writes obj as sigs.k8s.io/yaml does (JSON field names, keys sorted, the kubectl
// style), without its JSON → YAML re-parse: the JSON is decoded into plain maps and encoded
// directly. On a 1,000-class fleet that parse was most of this backend's time. The goldens
// and kubeconform hold the output to the same bytes and schemas.
func toYAML(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return yamlv2.Marshal(numbers(v))
}

// numbers turns json.Number into int64 or float64 so YAML writes them unquoted.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}
