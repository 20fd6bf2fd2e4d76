package terraform

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/fleetc/fleetc/compiler/artifact"
)

// The inventory lists exactly the blocks the files hold, each with its file and owner: a
// class's blocks are the class's, keda.tf's the eks plane's, a workflow's its own.
func TestInventoryMatchesFiles(t *testing.T) {
	for _, name := range examples {
		f := example(t, name)
		files, mod, ds := GenerateModule(f, configs(t, f))
		inv := mod.Inventory
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		inFiles := map[string]string{}
		for _, file := range files {
			if !strings.HasSuffix(file.Path, ".tf") {
				continue
			}
			body, diags := hclsyntax.ParseConfig(file.Bytes, file.Path, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			for _, b := range body.Body.(*hclsyntax.Body).Blocks {
				switch b.Type {
				case "resource":
					inFiles[b.Labels[0]+"."+b.Labels[1]] = file.Path
				case "data":
					inFiles["data."+b.Labels[0]+"."+b.Labels[1]] = file.Path
				}
			}
		}
		if len(inv) != len(inFiles) {
			t.Errorf("%s: %d inventory entries for %d blocks", name, len(inv), len(inFiles))
		}
		if !slices.IsSortedFunc(inv, func(a, b artifact.Resource) int { return strings.Compare(a.Address, b.Address) }) {
			t.Errorf("%s: inventory not sorted by address", name)
		}
		for _, r := range inv {
			if inFiles[r.Address] != r.File || r.Part == "" || !strings.Contains(r.Address, r.Type+".") {
				t.Errorf("%s: %+v (file holding it: %q)", name, r, inFiles[r.Address])
			}
			var want string
			switch base := strings.TrimSuffix(strings.TrimPrefix(r.File, "terraform/"), ".tf"); {
			case strings.HasPrefix(base, "agent_"):
				want = PartClass + strings.TrimPrefix(base, "agent_")
			case base == "keda":
				want = PartEKS
			case base == "bus":
				want = PartBus
			case base == "state" || base == "tools":
				want = PartState
			case base == "versions":
				want = PartProvider
			case base == "monitoring":
				want = PartMonitoring
			}
			if want != "" && r.Part != want {
				t.Errorf("%s: %s owned by %q, want %q", name, r.Address, r.Part, want)
			}
			if base := r.File; strings.HasSuffix(base, "workflows.tf") && !strings.HasPrefix(r.Part, PartWorkflow) {
				t.Errorf("%s: %s in workflows.tf owned by %q", name, r.Address, r.Part)
			}
		}
	}
}
