package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// docs/development.md's package map names every package of the module with the first
// sentence of its package comment, which is where a package says what it is: the page is
// generated from the comments (go test ./cmd/fleetc -run TestPackageMap -update) and this
// test fails when a package is added, moved or renamed without it.
func TestPackageMap(t *testing.T) {
	const path, begin, end = "../../docs/development.md", "<!-- package map: begin -->\n", "<!-- package map: end -->\n"
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var b strings.Builder
	b.WriteString(begin + "\n| package | what it is |\n|---|---|\n")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, doc, _ := strings.Cut(line, "\t")
		pkg = strings.TrimPrefix(pkg, "github.com/fleetc/fleetc/")
		if pkg == "github.com/fleetc/fleetc" {
			pkg = "."
		}
		if doc == "" {
			doc = "(tests only)"
		}
		b.WriteString("| `" + pkg + "` | " + strings.ReplaceAll(doc, "|", `\|`) + " |\n")
	}
	b.WriteString("\n" + end)
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(page, []byte(begin)), bytes.Index(page, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	want := append(append(append([]byte{}, page[:i]...), b.String()...), page[j+len(end):]...)
	if bytes.Equal(want, page) {
		return
	}
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's package map is stale: go test ./cmd/fleetc -run TestPackageMap -update", path)
}
