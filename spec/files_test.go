package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A system prompt the spec names relative to its directory must be there when the spec is
// read from a file: P014 at the value that names it; once the file exists, nothing. An
// absolute path is the image's and is not checked.
func TestReferencedFilesExist(t *testing.T) {
	src, err := os.ReadFile("../examples/async-tools/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(spec, src, 0o644); err != nil {
		t.Fatal(err)
	}
	_, ds := LoadFile(spec)
	var got []string
	for _, d := range ds {
		if d.Code == CodeMissingFile {
			got = append(got, d.String())
		}
	}
	want := spec + ":96:31: P014: class release-assistant's system prompt prompts/release-assistant.md does not exist"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("P014 findings %q, want one starting %q", got, want)
	}

	if err := os.MkdirAll(filepath.Join(dir, "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts", "release-assistant.md"), []byte("You answer release questions.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ds := LoadFile(spec); len(ds) != 0 {
		t.Errorf("with the prompt in place: %v", ds)
	}

	abs := strings.Replace(string(src), "system: prompts/release-assistant.md", "system: /app/prompts/release-assistant.md", 1)
	if err := os.WriteFile(spec, []byte(abs), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ds := LoadFile(spec); len(ds) != 0 {
		t.Errorf("an absolute (image) path was checked here: %v", ds)
	}
}
