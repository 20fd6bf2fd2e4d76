package check

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// load runs the driver's pipeline: load, lower, check, locate, sort.
func load(t *testing.T, name string, src []byte) diag.Diagnostics {
	t.Helper()
	file, ds := spec.Load(name, src)
	if ds.HasErrors() {
		t.Fatalf("%s does not load:\n%v", name, ds)
	}
	f, lds := ir.Lower(file)
	if lds.HasErrors() {
		t.Fatalf("%s does not lower:\n%v", name, lds)
	}
	cds := Run(f)
	for _, d := range cds {
		if d.Subject != nil {
			t.Errorf("Run set Subject on %v; locating is the driver's job", d)
		}
	}
	if f.Index != nil {
		f.Index.Locate(cds)
	}
	return append(append(ds, lds...), cds...).Sorted()
}

// knownInExamples is every finding the shipped examples may produce, each with its reason
// ("file: severity ID path-prefix" → why). The examples are clean today: the lead moved
// ir.DefaultMaxReceives to 3 (Q005) and research-fleet's archive inside its idempotency
// window (E013) when the catalog first ran over them.
var knownInExamples = map[string]string{}

func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/fleet.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	var got []string
	for _, p := range files {
		name := filepath.Base(filepath.Dir(p))
		for _, d := range load(t, p, mustRead(t, p)) {
			t.Logf("%s %v", d.Severity, d)
			got = append(got, strings.Join([]string{name + ":", d.Severity.String(), d.Code, pathPrefix(d.Path)}, " "))
		}
	}
	var want []string
	for k := range knownInExamples {
		want = append(want, k)
	}
	if diff := cmp.Diff(sorted(want), sorted(got)); diff != "" {
		t.Errorf("example findings changed (-known +got):\n%s", diff)
	}
}

// pathPrefix keeps the class or spec section of a pointer, so the table survives a
// finding moving from a defaulted value to its class.
func pathPrefix(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 3 && parts[1] == "agents" {
		return strings.Join(parts[:3], "/")
	}
	return p
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
