package terraform

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

func TestDump(t *testing.T) {
	out := os.Getenv("TFDUMP")
	if out == "" {
		t.Skip()
	}
	for _, ex := range []string{"research-fleet", "async-tools", "minimal"} {
		file, ds := spec.LoadFile("../../examples/" + ex + "/fleet.yaml")
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		f, ds := ir.Lower(file)
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		files, ds := Generate(f)
		t.Log(ex, ds)
		for _, fl := range files {
			p := filepath.Join(out, ex, fl.Path)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, fl.Bytes, 0o644)
		}
	}
}

func TestDumpFixtures(t *testing.T) {
	out := os.Getenv("TFDUMP")
	if out == "" {
		t.Skip()
	}
	for _, ex := range []string{"agentcore", "collision"} {
		file, ds := spec.LoadFile("testdata/" + ex + "/fleet.yaml")
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		f, ds := ir.Lower(file)
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		files, ds := Generate(f)
		t.Log(ex, ds)
		for _, fl := range files {
			p := filepath.Join(out, ex, fl.Path)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, fl.Bytes, 0o644)
		}
	}
}
