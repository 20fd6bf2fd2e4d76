package compiler_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/fleetc/fleetc/compiler"
)

// awsNameLimits is the longest name AWS accepts per Terraform resource type fleetc writes.
var awsNameLimits = map[string]int{
	"aws_sqs_queue": 80, "aws_iam_role": 64, "aws_iam_role_policy": 128, "aws_iam_policy": 128,
	"aws_lambda_function": 64, "aws_cloudwatch_event_rule": 64, "aws_pipes_pipe": 64,
	"aws_sfn_state_machine": 80, "aws_cloudwatch_event_archive": 48, "aws_schemas_schema": 385,
	"aws_cloudwatch_log_group": 512, "aws_cloudwatch_event_bus": 256, "aws_dynamodb_table": 255,
}

// name is a spec name of exactly n characters matching [a-z][a-z0-9-]*.
func name(prefix string, n int) string {
	s := prefix + strings.Repeat("x", max(0, n-len(prefix)))
	return s[:n]
}

// namedFleet uses every spec name fleetc derives AWS and ASL names from.
func namedFleet(fleet, class, wf, step int) string {
	f, c, w, s := name("f", fleet), name("c", class), name("w", wf), strings.ToUpper(name("s", step)[:1])+name("s", step)[1:]
	return fmt.Sprintf(`version: 1
fleet: %[1]s
region: us-east-1
bus: { name: %[1]s, archive: { retention: 7d } }
worker: { image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/fleet-worker:0.1.0, eks: { cluster: agents, keda_operator_role: "arn:aws:iam::111122223333:role/keda-operator" } }
events:
  task.requested: { version: 1, source: app.x, detail: { type: object, required: [trace_id, conversation_id], properties: { trace_id: { type: string }, conversation_id: { type: string, maxLength: 128 } } } }
agents:
  %[2]s:
    runtime: eks
    consumes: { event: task.requested }
    ordering: { fifo: true, group_by: conversation_id }
    step: { p95: 5s, max: 1m }
    handler: { exec: [/app/x] }
  l%[2]s:
    runtime: lambda
    consumes: { event: task.requested }
    step: { p95: 5s, max: 1m }
    handler: { exec: [/app/y] }
workflows:
  %[3]s:
    steps:
      - { name: %[4]s, agent: %[2]s }
      - fan_out: { items: $.xs, agent: l%[2]s }
      - { name: %[4]sFailed, agent: l%[2]s }
`, f, c[:len(c)-1], w, s)
}

// TestGeneratedNamesWithinLimits is a property over spec names at and around every limit
// (issue 7 item 7): either validate refuses the spec with P007 at a position in the file, or
// every name the build writes (Terraform resource names, ASL state names and Map labels) is
// within what AWS accepts. asl-validator refused an 86-character <step>Failed before.
func TestGeneratedNamesWithinLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	edge := func(limit int) int { // 1, the limit, or around the lengths that make derived names overflow
		switch rng.IntN(4) {
		case 0:
			return 1 + rng.IntN(limit)
		case 1:
			return limit
		default:
			return max(2, limit-rng.IntN(12))
		}
	}
	refused, built := 0, 0
	for i := 0; i < 120; i++ {
		fl, cl, wf, st := edge(24), edge(40), edge(40), edge(74)
		src := namedFleet(fl, cl, wf, st)
		// Every other fleet is built in an environment, whose name lengthens every derived
		// name: the limits are checked with it in.
		env := ""
		if i%2 == 1 {
			env = "e" + strings.Repeat("n", edge(12)-1)
			src += "environments:\n  " + env + ": {}\n"
		}
		_, fleet, ds := compiler.LoadBytesEnv("names.yaml", []byte(src), env)
		var p007 []string
		for _, d := range ds {
			if d.Code == "P007" {
				p007 = append(p007, d.String())
				if d.Subject == nil || d.Subject.Start.Line <= 1 {
					t.Errorf("fleet %d/%d/%d/%d: P007 without a position in the spec: %v", fl, cl, wf, st, d)
				}
			} else if d.Severity.String() == "error" {
				t.Fatalf("fleet %d/%d/%d/%d: unexpected %v", fl, cl, wf, st, d)
			}
		}
		if len(p007) > 0 {
			refused++
			continue
		}
		set, gds := compiler.Generate(fleet)
		if gds.HasErrors() {
			t.Fatalf("fleet %d/%d/%d/%d validates but does not build: %v", fl, cl, wf, st, gds)
		}
		built++
		for _, f := range set.Files() {
			switch {
			case strings.HasSuffix(f.Path, ".asl.json"):
				checkStateNames(t, f.Path, f.Bytes)
			case strings.HasSuffix(f.Path, ".tf"):
				checkResourceNames(t, f.Path, f.Bytes)
			}
		}
	}
	if refused == 0 || built == 0 {
		t.Errorf("%d refused, %d built: the property did not reach both sides of the limits", refused, built)
	}
}

func checkStateNames(t *testing.T, path string, b []byte) {
	t.Helper()
	var def struct{ States map[string]json.RawMessage }
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatal(err)
	}
	for n, raw := range def.States {
		if len(n) > 80 {
			t.Errorf("%s: state name %q is %d characters; ASL allows 80", path, n, len(n))
		}
		var st struct {
			Label         string
			ItemProcessor *struct{ States map[string]json.RawMessage }
		}
		_ = json.Unmarshal(raw, &st)
		if len(st.Label) > 40 {
			t.Errorf("%s: Map label %q is over 40 characters", path, st.Label)
		}
		if st.ItemProcessor != nil {
			for c := range st.ItemProcessor.States {
				if len(c) > 80 {
					t.Errorf("%s: state name %q is %d characters; ASL allows 80", path, c, len(c))
				}
			}
		}
	}
}

func checkResourceNames(t *testing.T, path string, b []byte) {
	t.Helper()
	file, diags := hclsyntax.ParseConfig(b, path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, blk := range file.Body.(*hclsyntax.Body).Blocks {
		if blk.Type != "resource" {
			continue
		}
		limit, ok := awsNameLimits[blk.Labels[0]]
		for attr, lim := range map[string]int{"name": limit, "target_id": 64, "alarm_name": 255} {
			a, found := blk.Body.Attributes[attr]
			if !found || (attr == "name" && !ok) {
				continue
			}
			v, vd := a.Expr.Value(nil)
			if vd.HasErrors() || !v.IsKnown() || v.Type().FriendlyName() != "string" {
				continue // an expression, not a literal name
			}
			if s := v.AsString(); len(s) > lim {
				t.Errorf("%s: %s.%s %s %q is %d characters; AWS allows %d", path, blk.Labels[0], blk.Labels[1], attr, s, len(s), lim)
			}
		}
	}
}
