// Package irtest loads specs into IRs for tests, failing the test on any error.
package irtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Load loads and lowers the spec at path.
func Load(t testing.TB, path string) *ir.Fleet {
	t.Helper()
	file, ds := spec.LoadFile(path)
	return lower(t, path, file, ds)
}

// LoadSource loads and lowers a spec held in a string.
func LoadSource(t testing.TB, src string) *ir.Fleet {
	t.Helper()
	file, ds := spec.Load("fleet.yaml", []byte(src))
	return lower(t, "fleet.yaml", file, ds)
}

func lower(t testing.TB, name string, file *spec.File, ds diag.Diagnostics) *ir.Fleet {
	t.Helper()
	if file == nil || ds.HasErrors() {
		t.Fatalf("load %s:\n%v", name, ds)
	}
	f, ds := ir.Lower(file)
	if ds.HasErrors() {
		t.Fatalf("lower %s:\n%v", name, ds)
	}
	return f
}

// Examples returns the paths of every examples/*/fleet.yaml, found from the repository root.
func Examples(t testing.TB) []string {
	t.Helper()
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "examples", "*", "fleet.yaml"))
	if len(paths) == 0 {
		t.Fatal("no examples/*/fleet.yaml found")
	}
	return paths
}
