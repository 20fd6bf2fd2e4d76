package deploy

import (
	"testing"

	"github.com/fleetc/fleetc/internal/genjson"
)

// TestEmulatorDefinitionForm: the emulator's copy is written by the one generated-JSON
// encoder: a definition with nothing to rewrite comes back byte for byte as genjson writes it
// (two-space indent, keys sorted, < > & unescaped, numbers as written, trailing newline).
func TestEmulatorDefinitionForm(t *testing.T) {
	in := "{\n" +
		"  \"Comment\": \"a < b && c > d\",\n" +
		"  \"StartAt\": \"Wait\",\n" +
		"  \"States\": {\n" +
		"    \"Wait\": {\n" +
		"      \"End\": true,\n" +
		"      \"Seconds\": 1.50,\n" +
		"      \"Type\": \"Wait\"\n" +
		"    }\n" +
		"  }\n" +
		"}\n"
	out, changed, err := EmulatorDefinition([]byte(in))
	if err != nil || len(changed) != 0 {
		t.Fatalf("EmulatorDefinition: %v, changed %v", err, changed)
	}
	if string(out) != in {
		t.Errorf("emulator definition\n%s\nwant\n%s", out, in)
	}
	// The same bytes as genjson gives for the decoded document: one encoder, one form.
	doc := map[string]any{"Comment": "x<y", "StartAt": "W", "States": map[string]any{}}
	want, _ := genjson.Encode(doc)
	got, _, err := EmulatorDefinition(want)
	if err != nil || string(got) != string(want) {
		t.Errorf("EmulatorDefinition(genjson form) = %q, %v; want %q", got, err, want)
	}
}
