package spec

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/spec-reference.md has a row for every top-level part of the schema, and says of each
// handler kind what type the schema gives it (exec is a list, not a string).
func TestSpecReferenceCoversTheSchema(t *testing.T) {
	doc, err := os.ReadFile("../docs/spec-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties  map[string]any `json:"properties"`
		Definitions struct {
			Agent struct {
				Properties struct {
					Handler struct {
						Properties map[string]struct {
							Type string `json:"type"`
						} `json:"properties"`
					} `json:"handler"`
				} `json:"properties"`
			} `json:"agent"`
		} `json:"definitions"`
	}
	b, err := os.ReadFile("../schemas/fleet.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| ([^|]+) \|`).FindAllStringSubmatch(string(doc), -1)
	for name := range schema.Properties {
		found := false
		for _, r := range rows {
			if strings.Contains(r[1], "`"+name+"`") || strings.Contains(r[1], "`"+name+".") {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/spec-reference.md has no row for top-level %q", name)
		}
	}
	words := map[string]string{"array": "a list", "string": "a sidecar URL"}
	for kind, p := range schema.Definitions.Agent.Properties.Handler.Properties {
		w, ok := words[p.Type]
		if !ok {
			continue
		}
		if !strings.Contains(string(doc), "`"+kind+"`, "+w) {
			t.Errorf("docs/spec-reference.md does not say handler %s is %s (schema type %s)", kind, w, p.Type)
		}
	}
}
