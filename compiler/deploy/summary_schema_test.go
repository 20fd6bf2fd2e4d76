package deploy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/schemas/output"
	"github.com/fleetc/fleetc/spec/diag"
)

// TestSummaryMatchesPlanSchema: the plan summary `fleetc plan --format json` prints (with
// the build's diagnostics in its header) is what schemas/output/plan.schema.json describes.
// The command's own test can only reach the build's failure offline; this one holds the
// summary of a plan with every kind of change.
func TestSummaryMatchesPlanSchema(t *testing.T) {
	schemas, err := output.Compile()
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(planFixture(), fixtureGroups)
	s.Endpoint = "http://127.0.0.1:4566"
	s.EmulatorOmissions = []Omission{{Address: "aws_eks_pod_identity_association.solver_worker", Gap: "eks-pod-identity"}}
	var ds diag.Diagnostics
	ds.Warnf("M001", "/models/fast", "model policy fast has no cross-group fallback")
	s.Header = jsonreport.NewHeader(ds)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if err := schemas["plan"].Validate(doc); err != nil {
		t.Errorf("the plan summary does not match plan.schema.json: %#v\n%s", err, b)
	}
	doc["surprise"] = true
	if schemas["plan"].Validate(doc) == nil {
		t.Error("plan.schema.json accepts a field it does not describe")
	}
}
