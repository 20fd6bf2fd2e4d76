package artifact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func set(t *testing.T, files map[string]string) *Set {
	t.Helper()
	s, _ := NewSet()
	for p, b := range files {
		if err := s.Add(File{Path: p, Bytes: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestWriteDirOwnsOnlyItsFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte("spec"), 0o644)
	if err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v1", "runtime/a.json": "a"})); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "terraform", "terraform.tfstate"), []byte("state"), 0o644)
	if err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v2"})); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"fleet.yaml": "spec", "terraform/main.tf": "v2", "terraform/terraform.tfstate": "state"} {
		if got := read(t, filepath.Join(dir, p)); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runtime")); !os.IsNotExist(err) {
		t.Error("stale owned file (and its emptied directory) survived")
	}
	owned, err := ReadOwned(dir)
	if err != nil || strings.Join(owned.Paths(), ",") != "terraform/main.tf" {
		t.Errorf("owned = %v, %v", owned, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".fleetc-stage-") {
			t.Errorf("staging directory left behind: %s", e.Name())
		}
	}
}

func TestWriteDirChangesNothingWhenAFileIsInTheWay(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v1"})); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "runtime"), []byte("user file"), 0o644)
	err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v2", "runtime/a.json": "a"}))
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("err = %v", err)
	}
	if got := read(t, filepath.Join(dir, "terraform/main.tf")); got != "v1" {
		t.Errorf("main.tf = %q: a failed write changed the previous output", got)
	}
	if got := read(t, filepath.Join(dir, "runtime")); got != "user file" {
		t.Errorf("user file = %q", got)
	}
}

func TestWriteDirRefusesAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "out")
	os.WriteFile(f, []byte("x"), 0o644)
	if err := WriteDir(f, set(t, map[string]string{"a": "b"})); err == nil {
		t.Fatal("wrote into a regular file")
	}
}

func TestManifestCannotEscape(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, Manifest), []byte("../../etc/passwd\n"), 0o644)
	if err := WriteDir(dir, set(t, map[string]string{"a": "b"})); err == nil {
		t.Fatal("a manifest naming a path outside the directory was obeyed")
	}
}

func TestDiffBothDirections(t *testing.T) {
	have := set(t, map[string]string{"a": "1", "b": "2"})
	want := set(t, map[string]string{"b": "3", "c": "4"})
	var got []string
	for _, c := range Diff(have, want) {
		got = append(got, c.Kind+":"+c.Path)
	}
	if strings.Join(got, " ") != "removed:a changed:b added:c" {
		t.Errorf("diff = %v", got)
	}
}

func TestAddRejectsUncleanPaths(t *testing.T) {
	s, _ := NewSet()
	for _, p := range []string{"../x", "/abs", "a/../b", "a//b"} {
		if err := s.Add(File{Path: p}); err == nil {
			t.Errorf("accepted %q", p)
		}
	}
	if err := s.Add(File{Path: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(File{Path: "a"}); err == nil {
		t.Error("accepted a duplicate path")
	}
}

// A build killed after staging leaves a staging directory; the next build removes it.
func TestWriteDirRemovesAbandonedStages(t *testing.T) {
	dir := t.TempDir()
	abandoned := filepath.Join(dir, stagePrefix+"123", "terraform")
	os.MkdirAll(abandoned, 0o755)
	os.WriteFile(filepath.Join(abandoned, "main.tf"), []byte("half"), 0o644)
	if err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v1"})); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagePrefix) {
			t.Errorf("abandoned staging directory survived: %s", e.Name())
		}
	}
}
