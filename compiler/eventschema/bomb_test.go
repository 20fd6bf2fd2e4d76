package eventschema

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// A detail schema whose smallest event cannot be sent is an error, found without building it:
// before the budget, 1,000 required fields of minLength 1048576 (74 KB of spec) made example
// generation allocate gigabytes.
func TestMinLengthBomb(t *testing.T) {
	src, err := os.ReadFile("../../examples/minimal/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var props, req strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&props, "        f%d: { type: string, minLength: 1048576 }\n", i)
		fmt.Fprintf(&req, "f%d, ", i)
	}
	spec := strings.Replace(string(src),
		"      required: [trace_id, name]\n      properties:\n",
		"      required: ["+req.String()+"trace_id, name]\n      properties:\n"+props.String(), 1)
	f := irtest.LoadSource(t, spec)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	files, ds := Generate(f)
	runtime.ReadMemStats(&after)

	want := fmt.Sprintf("event greeting.requested: the smallest event this detail schema allows is over %d bytes, the most one PutEvents entry may carry", maxEntryBytes)
	if len(ds) != 1 || !ds.HasErrors() || ds[0].Summary != want || ds[0].Subject == nil {
		t.Fatalf("diagnostics %v, want one positioned error %q", ds, want)
	}
	for _, file := range files {
		if strings.HasPrefix(file.Path, "schemas/examples/") {
			t.Errorf("an example was written: %s", file.Path)
		}
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("generation allocated %d MiB; the budget should stop it near one entry", alloc>>20)
	}
}

// A detail just inside the limit still gets its example.
func TestExampleUpToTheEntryLimit(t *testing.T) {
	src, err := os.ReadFile("../../examples/minimal/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.Replace(string(src), "        name: { type: string }\n",
		fmt.Sprintf("        name: { type: string, minLength: %d }\n", maxEntryBytes-200), 1)
	_, ds := Generate(irtest.LoadSource(t, spec))
	if len(ds) != 0 {
		t.Errorf("diagnostics %v", ds)
	}
	spec = strings.Replace(string(src), "        name: { type: string }\n",
		fmt.Sprintf("        name: { type: string, minLength: %d }\n", maxEntryBytes), 1)
	if _, ds := Generate(irtest.LoadSource(t, spec)); !ds.HasErrors() {
		t.Errorf("a detail of one %d-character field is no error", maxEntryBytes)
	}
}
