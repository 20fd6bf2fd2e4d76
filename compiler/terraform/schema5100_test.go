package terraform

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/internal/verifytest"
)

// TestExamplesAgainstRealSchema checks every example's Terraform against the real 5.100.0
// provider schema too (../shared/terraform/aws-provider-schema-5.100.0.json), not only the
// 6.x subset: arguments, blocks and required fields as the released provider defines them.
// Resource types that first appear in 6.x (aws_bedrockagentcore_*, behind the generated
// ">= 6.18" constraint) may be unknown there, and so may the two data sources, which that
// file (the fleet's services only) does not hold; terraform validate with the real 5.100.0
// provider checks those (TestExamplesValidate).
func TestExamplesAgainstRealSchema(t *testing.T) {
	shared, err := verifytest.SharedDir()
	if err != nil {
		t.Fatal(err)
	}
	schema := filepath.Join(shared, "terraform", "aws-provider-schema-5.100.0.json")
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			root := writeOut(t, example(t, name))
			for _, err := range verifytest.CheckTerraformAgainstSchema(filepath.Join(root, Dir), schema) {
				verifytest.SkipIfMissing(t, err)
				if msg := err.Error(); strings.Contains(msg, "aws_bedrockagentcore_") ||
					strings.Contains(msg, `unknown data source type "aws_caller_identity"`) || strings.Contains(msg, `unknown data source type "aws_partition"`) {
					continue
				}
				t.Errorf("provider 5.100.0 schema: %v", err)
			}
		})
	}
}
