package terraform

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/fleetc/fleetc/compiler/registry"
)

// One writer per schema: the generated Terraform manages exactly one registry, the fleet's
// SchemaRegistry, and every aws_schemas_schema lives in it; `fleetc schemas publish` refuses
// that registry (registry.Check with Options.Managed), so the two never write one schema.
func TestSchemaRegistryHasOneWriter(t *testing.T) {
	for _, name := range examples {
		f := example(t, name)
		files, ds := Generate(f, configs(t, f))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		var registries, schemas []string
		for _, file := range files {
			if !strings.HasSuffix(file.Path, ".tf") {
				continue
			}
			body, diags := hclsyntax.ParseConfig(file.Bytes, file.Path, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			for _, b := range body.Body.(*hclsyntax.Body).Blocks {
				if b.Type != "resource" || len(b.Labels) != 2 {
					continue
				}
				attr := func(n string) string {
					a, ok := b.Body.Attributes[n]
					if !ok {
						return ""
					}
					return string(a.Expr.Range().SliceBytes(file.Bytes))
				}
				switch b.Labels[0] {
				case "aws_schemas_registry":
					registries = append(registries, attr("name"))
				case "aws_schemas_schema":
					schemas = append(schemas, attr("registry_name"))
				}
			}
		}
		if len(f.Events) > 0 && (len(registries) != 1 || registries[0] != `"`+f.SchemaRegistry+`"`) {
			t.Errorf("%s: registries %v, want exactly %q", name, registries, f.SchemaRegistry)
		}
		for _, r := range schemas {
			if r != "aws_schemas_registry.fleet.name" {
				t.Errorf("%s: a schema in registry %s", name, r)
			}
		}
		if len(schemas) != len(f.Events) {
			t.Errorf("%s: %d schemas for %d events", name, len(schemas), len(f.Events))
		}
		err := registry.Check(registry.Options{Registry: f.SchemaRegistry, Managed: f.SchemaRegistry}, nil)
		if err == nil || !strings.Contains(err.Error(), "the fleet's own") {
			t.Errorf("%s: publish would write into the Terraform-managed registry: %v", name, err)
		}
	}
}
