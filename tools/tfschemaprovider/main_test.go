package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func TestLoadSharedSchema(t *testing.T) {
	path := "../../../shared/terraform/aws-provider-schema.json"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("SKIPPED: %v (shared/ is expected at ../shared from the repo root)", err)
	}
	resp, err := load(path, "registry.terraform.io/hashicorp/aws")
	if err != nil {
		t.Fatal(err)
	}
	q := resp.ResourceSchemas["aws_sqs_queue"]
	if q == nil {
		t.Fatal("aws_sqs_queue missing")
	}
	var arn, delay *tfprotov5.SchemaAttribute
	for _, a := range q.Block.Attributes {
		switch a.Name {
		case "arn":
			arn = a
		case "delay_seconds":
			delay = a
		}
	}
	if arn == nil || !arn.Computed || arn.Optional || !arn.Type.Is(tftypes.String) {
		t.Errorf("arn: %+v", arn)
	}
	if delay == nil || !delay.Optional || !delay.Type.Is(tftypes.Number) {
		t.Errorf("delay_seconds: %+v", delay)
	}
	if _, ok := resp.ResourceSchemas["aws_bedrockagentcore_agent_runtime"]; !ok {
		t.Error("aws_bedrockagentcore_agent_runtime missing")
	}
	md, _ := (&server{schema: resp}).GetMetadata(context.Background(), nil)
	if len(md.Resources) != len(resp.ResourceSchemas) || len(md.DataSources) != len(resp.DataSourceSchemas) {
		t.Errorf("metadata lists %d/%d types, schema has %d/%d", len(md.Resources), len(md.DataSources), len(resp.ResourceSchemas), len(resp.DataSourceSchemas))
	}
}

func TestConvertBlock(t *testing.T) {
	var b jsonBlock
	doc := `{"attributes": {"b": {"type": ["list", "string"], "required": true}, "a": {"type": "bool", "optional": true}},
	         "block_types": {"ttl": {"nesting_mode": "list", "max_items": 1, "block": {"attributes": {"on": {"type": "bool", "optional": true}}}}}}`
	if err := json.Unmarshal([]byte(doc), &b); err != nil {
		t.Fatal(err)
	}
	got, err := convertBlock(&b, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Attributes) != 2 || got.Attributes[0].Name != "a" || got.Attributes[1].Name != "b" || !got.Attributes[1].Required {
		t.Errorf("attributes not sorted or wrong: %+v %+v", got.Attributes[0], got.Attributes[1])
	}
	if !got.Attributes[1].Type.Is(tftypes.List{ElementType: tftypes.String}) {
		t.Errorf("b type = %v", got.Attributes[1].Type)
	}
	if len(got.BlockTypes) != 1 || got.BlockTypes[0].Nesting != tfprotov5.SchemaNestedBlockNestingModeList || got.BlockTypes[0].MaxItems != 1 {
		t.Errorf("block types: %+v", got.BlockTypes)
	}

	for _, bad := range []struct{ doc, want string }{
		{`{"attributes": {"n": {"nested_type": {"attributes": {}}, "optional": true}}}`, "protocol 6"},
		{`{"attributes": {"n": {"type": "strang"}}}`, "x.n: type"},
		{`{"block_types": {"n": {"nesting_mode": "bag"}}}`, `unknown nesting_mode "bag"`},
	} {
		var b jsonBlock
		if err := json.Unmarshal([]byte(bad.doc), &b); err != nil {
			t.Fatal(err)
		}
		if _, err := convertBlock(&b, "x"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.doc, err, bad.want)
		}
	}
}

// TestSupplement: the 5.100.0 schema adds the types the 6.x subset lacks
// (aws_eks_pod_identity_association) and replaces none the subset defines.
func TestSupplement(t *testing.T) {
	base, sup := "../../../shared/terraform/aws-provider-schema.json", "../../../shared/terraform/aws-provider-schema-5.100.0.json"
	for _, p := range []string{base, sup} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("SKIPPED: %v (shared/ is expected at ../shared from the repo root)", err)
		}
	}
	const src = "registry.terraform.io/hashicorp/aws"
	resp, err := load(base, src)
	if err != nil {
		t.Fatal(err)
	}
	more, err := load(sup, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.ResourceSchemas["aws_eks_pod_identity_association"]; ok {
		t.Fatal("the 6.x subset now has aws_eks_pod_identity_association: the supplement may be unnecessary")
	}
	queue := resp.ResourceSchemas["aws_sqs_queue"]
	supplement(resp, more)
	if resp.ResourceSchemas["aws_eks_pod_identity_association"] == nil {
		t.Error("aws_eks_pod_identity_association not supplemented")
	}
	if resp.ResourceSchemas["aws_sqs_queue"] != queue {
		t.Error("aws_sqs_queue replaced by the supplement's version")
	}
}
