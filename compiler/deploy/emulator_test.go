package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/internal/hcltest"
)

// generate builds a spec (a path under the repository, or testdata/e2e.yaml with FLEET named).
func generate(t *testing.T, specPath string) *artifact.Set {
	t.Helper()
	src, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	_, fleet, ds := compiler.LoadBytes(specPath, bytes.ReplaceAll(src, []byte("FLEET"), []byte("unit")))
	if fleet == nil || ds.HasErrors() {
		t.Fatalf("%s: %v", specPath, ds)
	}
	set, gds := compiler.Generate(fleet)
	if gds.HasErrors() {
		t.Fatal(gds)
	}
	return set
}

var specs = []string{"testdata/e2e.yaml", "../../examples/research-fleet/fleet.yaml", "../../examples/minimal/fleet.yaml", "../../examples/async-tools/fleet.yaml", rolloutSpec}

// overrideBlocks reads an override file (through the test oracle's parser) into
// "kind label label" → body.
func overrideBlocks(t *testing.T, src []byte) map[string]*hcltest.Body {
	t.Helper()
	m := map[string]*hcltest.Body{}
	for _, b := range hcltest.Parse(t, OverrideFile, src).Blocks {
		m[strings.Join(append([]string{b.Type}, b.Labels...), " ")] = b.Body
	}
	return m
}

// generatedHas reports whether a generated block has a nested block of type typ.
func generatedHas(r *block, typ string) bool {
	return slices.ContainsFunc(r.Attrs, func(a artifact.Attr) bool { return strings.HasPrefix(a.Path, typ+".") })
}

// TestEmulatorOverrideLeavesAWSOutputUnchanged: the generated files are the same bytes with
// and without an override, and none of them is the override file.
func TestEmulatorOverrideLeavesAWSOutputUnchanged(t *testing.T) {
	for _, spec := range specs {
		set := generate(t, spec)
		before := map[string]string{}
		for _, f := range set.Files() {
			before[f.Path] = string(f.Bytes)
		}
		if _, err := EmulatorOverride(set, "http://127.0.0.1:4566", KumoGaps); err != nil {
			t.Fatal(err)
		}
		again := generate(t, spec)
		for _, f := range set.Files() {
			if before[f.Path] != string(f.Bytes) {
				t.Errorf("%s: %s changed by EmulatorOverride", spec, f.Path)
			}
			if g, _ := again.Get(f.Path); string(g) != string(f.Bytes) {
				t.Errorf("%s: %s differs between builds", spec, f.Path)
			}
			if filepath.Base(f.Path) == OverrideFile {
				t.Errorf("%s: build wrote the emulator override", spec)
			}
		}
	}
}

// TestEachKumoGap checks, per gap, that the AWS configuration keeps what AWS gets and that
// the override does exactly the gap's workaround on every resource it matches.
func TestEachKumoGap(t *testing.T) {
	for _, g := range KumoGaps {
		t.Run(g.ID, func(t *testing.T) {
			matched := 0
			for _, spec := range specs {
				set := generate(t, spec)
				mod := moduleOf(set)
				o, err := EmulatorOverride(set, "http://127.0.0.1:4566", []Gap{g})
				if err != nil {
					t.Fatal(err)
				}
				blocks := overrideBlocks(t, o.Bytes)
				for _, r := range mod.resources {
					if r.Type != g.Resource || g.Match != nil && !g.Match(r.Block) {
						continue
					}
					matched++
					ob := blocks["resource "+r.Type+" "+r.Name]
					if ob == nil {
						t.Fatalf("%s: no override for %s", spec, r.addr())
					}
					if g.Drop {
						if _, ok := ob.Attrs["count"]; !ok {
							t.Errorf("%s: %s not left out", spec, r.addr())
						}
						continue
					}
					for k := range g.Set {
						if _, ok := ob.Attrs[k]; !ok {
							t.Errorf("%s: %s.%s not overridden", spec, r.addr(), k)
						}
						// What AWS gets still sets it.
						if _, ok := r.Attr(k); !ok {
							t.Errorf("%s: generated %s no longer sets %s: the gap is stale", spec, r.addr(), k)
						}
					}
					for k := range g.Blocks {
						if !ob.Has(k) || !generatedHas(r, k) {
							t.Errorf("%s: %s block %s: in override %v, in generated %v", spec, r.addr(), k, ob.Has(k), generatedHas(r, k))
						}
					}
					if _, ok := ob.Attrs["definition"]; g.Definition && !ok {
						t.Errorf("%s: %s definition not overridden", spec, r.addr())
					}
					if len(g.IgnoreChanges) > 0 && !ob.Has("lifecycle") {
						t.Errorf("%s: %s has no lifecycle override", spec, r.addr())
					}
				}
				// Only the provider block and this gap's edits (and dependents) are in the file.
				for _, om := range o.Omissions {
					if om.Gap != g.ID {
						t.Errorf("%s: omission %v is not from gap %s", spec, om, g.ID)
					}
				}
				if strings.Contains(string(o.Bytes), "access_key") || strings.Contains(string(o.Bytes), "secret_key") {
					t.Errorf("override carries credentials:\n%s", o.Bytes)
				}
			}
			if matched == 0 {
				t.Fatalf("no generated resource matches gap %s (%s): stale entry?", g.ID, g.Resource)
			}
		})
	}
}

// TestDroppedResourceDependents: the schema registry left out takes its schemas with it,
// and the output naming it becomes null through one(...[*]) so Terraform's static checks pass.
func TestDroppedResourceDependents(t *testing.T) {
	set := generate(t, "testdata/e2e.yaml")
	o, err := EmulatorOverride(set, "http://localhost:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	got := string(o.Bytes)
	for _, want := range []string{
		"resource \"aws_schemas_schema\" \"task_requested\" {\n  count         = 0\n  registry_name = one(aws_schemas_registry.fleet[*].name)\n}",
		"output \"schema_registry\" {\n  value = one(aws_schemas_registry.fleet[*].name)\n}",
		"sqs      = \"http://localhost:4566\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("override lacks\n%s\ngot:\n%s", want, got)
		}
	}
	// Terraform's formatter agrees with the file.
	if f := hclwriteFormat(o.Bytes); string(f) != got {
		t.Errorf("override not canonically formatted")
	}
}

func hclwriteFormat(b []byte) []byte { return hclwrite.Format(b) }

// TestKumoAccountGap: the KEDA scaler role is left out only when the spec names it in an
// account other than kumo's (research names 111122223333, the e2e fleet kumo's own).
func TestKumoAccountGap(t *testing.T) {
	for spec, dropped := range map[string]bool{"../../examples/research-fleet/fleet.yaml": true, "testdata/e2e.yaml": false} {
		o, err := EmulatorOverride(generate(t, spec), "http://127.0.0.1:4566", KumoGaps)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, om := range o.Omissions {
			if om.Gap == "kumo-account" {
				got = append(got, om.Address)
			}
		}
		want := map[bool]string{true: "aws_iam_role.keda_scaler aws_iam_role_policy.keda_scaler output.keda_scaler_role_arn", false: ""}[dropped]
		if strings.Join(got, " ") != want {
			t.Errorf("%s: kumo-account leaves out %q, want %q", spec, got, want)
		}
	}
}

// TestEmulatorDefinition: the override's definition reads a rewritten copy with nothing
// kumo cannot resolve, while the generated definition keeps every context field.
func TestEmulatorDefinition(t *testing.T) {
	set := generate(t, "../../examples/research-fleet/fleet.yaml")
	o, err := EmulatorOverride(set, "http://127.0.0.1:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Files) != 1 || o.Files[0].Path != "fleetc_emulator_conversation.asl.json" {
		t.Fatalf("files = %v", o.Files)
	}
	def := string(o.Files[0].Bytes)
	for _, gone := range []string{"$$.Execution", "$$.State", "States.Format(", "entered_time"} {
		if strings.Contains(def, gone) {
			t.Errorf("emulator definition still has %s", gone)
		}
	}
	for _, kept := range []string{`"execution_id.$": "$$.Task.Token"`, `"state": "Research"`, `"state": "SubQueriesItem"`,
		`"MessageGroupId.$": "$.conversation_id"`, `"QueueUrl": "${queue_url_researcher}"`, `"index.$": "$$.Map.Item.Index"`} {
		if !strings.Contains(def, kept) {
			t.Errorf("emulator definition lacks %s", kept)
		}
	}
	for _, want := range []string{`definition = templatefile("${path.module}/fleetc_emulator_conversation.asl.json", {`,
		"queue_url_coder      = aws_sqs_queue.coder_ingress.url", "queue_url_researcher = aws_sqs_queue.researcher_ingress.url"} {
		if !strings.Contains(string(o.Bytes), want) {
			t.Errorf("override lacks %s:\n%s", want, o.Bytes)
		}
	}
	// A standard class queue is sent to directly.
	e2e, err := EmulatorOverride(generate(t, "testdata/e2e.yaml"), "http://127.0.0.1:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(e2e.Bytes), "queue_url_solver = aws_sqs_queue.solver.url") {
		t.Errorf("e2e override:\n%s", e2e.Bytes)
	}
	aws, _ := set.Get("statemachines/conversation.asl.json")
	for _, kept := range []string{"$$.Execution.Id", "$$.State.Name", "$$.State.EnteredTime", "States.Format('{}', $.conversation_id)"} {
		if !strings.Contains(string(aws), kept) {
			t.Errorf("generated definition lost %s", kept)
		}
	}
}

// TestOmissionsSayWhy: each omission, as plan prints it, says what the emulator run lacks:
// a matched resource the gap's workaround, a dependent what it referred to (itself left out
// by the same gap), an output the null it became; sorted by address.
func TestOmissionsSayWhy(t *testing.T) {
	o, err := EmulatorOverride(generate(t, "testdata/e2e.yaml"), "http://localhost:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	gaps := map[string]Gap{}
	for _, g := range KumoGaps {
		gaps[g.ID] = g
	}
	byAddr := map[string]Omission{}
	for i, om := range o.Omissions {
		if i > 0 && o.Omissions[i-1].Address > om.Address {
			t.Errorf("omissions out of order: %s before %s", o.Omissions[i-1].Address, om.Address)
		}
		byAddr[om.Address] = om
	}
	var chain []string
	for _, om := range o.Omissions {
		ref, isDependent := strings.CutPrefix(om.What, "left out: refers to ")
		if out, isOutput := strings.CutPrefix(om.What, "null where it refers to "); isOutput {
			ref, isDependent = out, true
		}
		switch {
		case isDependent:
			if ref == om.Address || byAddr[ref].Gap != om.Gap {
				t.Errorf("%s refers to %s, whose omission %v is not from gap %s", om.Address, ref, byAddr[ref], om.Gap)
			}
			chain = append(chain, om.Address+" <- "+ref)
		case om.What != gaps[om.Gap].Workaround:
			t.Errorf("%s: omission says %q, gap %s's workaround is %q", om.Address, om.What, om.Gap, gaps[om.Gap].Workaround)
		}
	}
	if got, want := strings.Join(chain, ", "), "aws_schemas_schema.task_completed <- aws_schemas_registry.fleet, "+
		"aws_schemas_schema.task_requested <- aws_schemas_registry.fleet, output.schema_registry <- aws_schemas_registry.fleet"; got != want {
		t.Errorf("left out for referring to a left-out resource:\n%s\nwant\n%s", got, want)
	}
}
