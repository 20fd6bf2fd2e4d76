package dev

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The image's /app files run from the project's handler/ (init's layout: found beside the
// spec's directory); a file the project lacks, an argument outside /app and one that only
// starts with its letters stay as they are; the longest image prefix wins.
func TestPathMap(t *testing.T) {
	project := t.TempDir()
	for _, p := range []string{"handler/handler.py", "handler/lib/x.py", "handler/le", "fleet/fleet.yaml", "other/x.py"} {
		if err := os.MkdirAll(filepath.Join(project, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(project, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := DefaultPathMap(filepath.Join(project, "fleet", "fleet.yaml"))
	h := filepath.Join(project, "handler")
	if want := (PathMap{{Image: "/app", Local: h}}); !reflect.DeepEqual(m, want) {
		t.Fatalf("default map = %v, want %v", m, want)
	}
	got, note := m.Local([]string{"python3", "/app/handler.py", "/app/missing.py", "/apple", "/app"})
	want := []string{"python3", filepath.Join(h, "handler.py"), "/app/missing.py", "/apple", h}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("command = %v, want %v", got, want)
	}
	if !strings.HasPrefix(note, "handler runs as: python3 "+filepath.Join(h, "handler.py")) || !strings.Contains(note, "/app → "+h) {
		t.Errorf("note = %q", note)
	}
	if DefaultPathMap(filepath.Join(t.TempDir(), "fleet.yaml")) != nil {
		t.Error("a spec with no handler/ near it got a mapping")
	}

	// --path: the longer prefix wins; a local directory that does not exist is refused.
	t.Chdir(project)
	m, err := ParsePathMap([]string{"/app/lib=other", "/app=handler"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Command([]string{"/app/lib/x.py", "/app/handler.py"}); got[0] != filepath.Join(project, "other", "x.py") || got[1] != filepath.Join(h, "handler.py") {
		t.Errorf("--path map: %v", got)
	}
	for _, bad := range []string{"app=handler", "/app", "/app=nowhere"} {
		if _, err := ParsePathMap([]string{bad}); err == nil {
			t.Errorf("--path %s accepted", bad)
		}
	}
}
