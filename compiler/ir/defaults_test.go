package ir_test

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/spec"
)

// TestDefaultsAreDocumented: every value of the defaults table is what the schema's
// descriptions and docs/spec-reference.md say it is, so editing one without the others fails here.
func TestDefaultsAreDocumented(t *testing.T) {
	_, doc, err := spec.Schema()
	if err != nil {
		t.Fatal(err)
	}
	readme := readmeDefaults(t)
	v := reflect.ValueOf(ir.Defaults)
	for i := 0; i < v.NumField(); i++ {
		field := v.Type().Field(i)
		text := irtest.FormatDefault(v.Field(i).Interface())
		schemaPaths := strings.Fields(field.Tag.Get("schema"))
		if len(schemaPaths) == 0 {
			t.Errorf("%s: no schema tag: say where the schema documents the default", field.Name)
		}
		phrase := field.Tag.Get("phrase")
		if phrase == "" {
			phrase = "default %s"
		}
		want := fmt.Sprintf(phrase, text)
		quoted := regexp.MustCompile(`(?i)(^|\W)` + regexp.QuoteMeta(want) + `($|[^\w.]|\.(\s|$))`)
		for _, p := range schemaPaths {
			desc := description(doc, p)
			if !quoted.MatchString(desc) {
				t.Errorf("%s = %s, but the schema description at %s does not say %q:\n  %s", field.Name, text, p, want, desc)
			}
		}
		if tag := field.Tag.Get("readme"); tag != "" {
			if w := fmt.Sprintf(tag, text); !strings.Contains(readme, w) {
				t.Errorf("%s = %s, but docs/spec-reference.md's defaults paragraph does not say %q", field.Name, text, w)
			}
		}
	}
}

func description(doc map[string]any, pointer string) string {
	var cur any = doc
	for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		m, _ := cur.(map[string]any)
		cur = m[seg]
	}
	m, _ := cur.(map[string]any)
	s, _ := m["description"].(string)
	return s
}

// readmeDefaults is the defaults paragraph of docs/spec-reference.md, without backticks and line breaks.
func readmeDefaults(t *testing.T) string {
	b, err := os.ReadFile("../../docs/spec-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\nDefaults (from the seeds")
	if i < 0 {
		t.Fatal("docs/spec-reference.md has no defaults paragraph")
	}
	s = s[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ")
}
