package spec

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/spec/diag"
)

// envSpec is a small fleet with two environments; line numbers matter to the tests.
const envSpec = `version: 1
fleet: shop
region: eu-west-1
tags: { team: a }
bus: { name: shop }
events:
  e.one: { version: 1, source: s, detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } } }
agents:
  worker:
    runtime: lambda
    consumes: { event: e.one }
    step: { p95: 2s, max: 30s }
    handler: { exec: [/app/run] }
    scaling: { min: 0, max: 4 }
environments:
  dev: {}
  prod:
    region: us-east-1
    tags: { tier: gold }
    agents:
      worker:
        scaling: { max: 40 }
`

func mustLoad(t *testing.T, src string) *File {
	t.Helper()
	f, ds := Load("fleet.yaml", []byte(src))
	if ds.HasErrors() || f.Fleet == nil {
		t.Fatalf("load: %v", ds)
	}
	return f
}

// An environment is the document with its overrides merged in: maps merge key by key,
// scalars replace; values it does not override keep theirs; the spec itself is unchanged.
func TestSelectMergesOverrides(t *testing.T) {
	f := mustLoad(t, envSpec)
	if got := strings.Join(f.Environments(), ","); got != "dev,prod" {
		t.Fatalf("environments %q", got)
	}
	prod, ds := f.Select("prod")
	if ds.HasErrors() || prod == nil || prod.Fleet == nil {
		t.Fatalf("select prod: %v", ds)
	}
	p := prod.Fleet
	if p.Region != "us-east-1" || p.Tags["team"] != "a" || p.Tags["tier"] != "gold" {
		t.Errorf("prod region %q tags %v", p.Region, p.Tags)
	}
	if s := p.Agents["worker"].Scaling; s.Max != 40 || s.Min != 0 {
		t.Errorf("prod scaling %+v: max overridden, min kept", s)
	}
	if prod.Env != "prod" || p.Environments != nil {
		t.Errorf("prod: env %q, environments %v", prod.Env, p.Environments)
	}
	dev, _ := f.Select("dev")
	if dev.Fleet.Region != "eu-west-1" || dev.Fleet.Agents["worker"].Scaling.Max != 4 {
		t.Errorf("dev changed: %q %+v", dev.Fleet.Region, dev.Fleet.Agents["worker"].Scaling)
	}
	if f.Fleet.Region != "eu-west-1" || f.Fleet.Agents["worker"].Scaling.Max != 4 {
		t.Error("Select changed the spec itself")
	}
	// A value from an override is located at the override; the rest where the spec wrote it.
	if r := prod.Index.Subject("/agents/worker/scaling/max"); r.Start.Line != 22 {
		t.Errorf("prod scaling.max at line %d, want 22 (the override)", r.Start.Line)
	}
	if r := prod.Index.Subject("/agents/worker/scaling/min"); r.Start.Line != 14 {
		t.Errorf("prod scaling.min at line %d, want 14 (the spec)", r.Start.Line)
	}
	if r := dev.Index.Subject("/agents/worker/scaling/max"); r.Start.Line != 14 {
		t.Errorf("dev scaling.max at line %d, want 14", r.Start.Line)
	}
}

func only(t *testing.T, ds diag.Diagnostics, code string) *diag.Diagnostic {
	t.Helper()
	var found *diag.Diagnostic
	for _, d := range ds {
		if d.Code == code {
			if found != nil {
				t.Errorf("two %s: %v", code, ds)
			}
			found = d
		}
	}
	if found == nil {
		t.Fatalf("no %s in %v", code, ds)
	}
	return found
}

// An override of a field that must be the same everywhere is P012 at the override's key;
// a typo of an overridable field stays an unknown field with its suggestion.
func TestOverrideNotAllowed(t *testing.T) {
	src := strings.Replace(envSpec, "        scaling: { max: 40 }\n", "        scaling: { max: 40 }\n        step: { max: 1m }\n", 1)
	_, ds := Load("fleet.yaml", []byte(src))
	d := only(t, ds, "P012")
	if d.Subject.Start.Line != 23 || d.Subject.Start.Column != 9 {
		t.Errorf("P012 at %v, want fleet.yaml:23:9", d.Subject)
	}
	if !strings.Contains(d.Summary, "agents.worker.step cannot be overridden") || !strings.Contains(d.Detail, "Overridable here: image, lambda, scaling, traffic") {
		t.Errorf("P012 says %q / %q", d.Summary, d.Detail)
	}
	src = strings.Replace(envSpec, "    region: us-east-1\n", "    region: us-east-1\n    fleet: other\n", 1)
	_, ds = Load("fleet.yaml", []byte(src))
	if d := only(t, ds, "P012"); !strings.Contains(d.Summary, "environment prod: fleet cannot be overridden") {
		t.Errorf("top-level P012 says %q", d.Summary)
	}
	src = strings.Replace(envSpec, "scaling: { max: 40 }", "scalling: { max: 40 }", 1)
	_, ds = Load("fleet.yaml", []byte(src))
	if d := only(t, ds, "P002"); !strings.Contains(d.Summary, `did you mean "scaling"`) {
		t.Errorf("typo says %q", d.Summary)
	}
}

// An override whose value is invalid is reported at the override, by the schema; one that
// is valid alone but not merged (scaling.min above the spec's max is a rule matter, a
// missing required field is not) is reported when the environment is selected, there too.
func TestInvalidOverridePositioned(t *testing.T) {
	src := strings.Replace(envSpec, "scaling: { max: 40 }", "scaling: { max: -1 }", 1)
	_, ds := Load("fleet.yaml", []byte(src))
	d := only(t, ds, "P008")
	if d.Subject.Start.Line != 22 || !strings.HasPrefix(d.Path, "/environments/prod/agents/worker/scaling/max") {
		t.Errorf("invalid override at %v %s", d.Subject, d.Path)
	}
	src = strings.Replace(envSpec, "    region: us-east-1\n", "    region: us-east-1\n    worker: { eks: { cluster: c } }\n", 1)
	f := mustLoad(t, src)
	_, ds = f.Select("prod")
	d = only(t, ds, "P008")
	if !strings.Contains(d.Summary, `missing required field "keda_operator_role"`) || d.Subject.Start.Line != 19 {
		t.Errorf("merged P008 %q at %v, want line 19 (the override)", d.Summary, d.Subject)
	}
}

// --env naming an environment the spec lacks, or none for a spec that has some, is P013 at
// the environments key, with the names it has.
func TestSelectUnknownEnvironment(t *testing.T) {
	f := mustLoad(t, envSpec)
	sel, ds := f.Select("prd")
	d := only(t, ds, "P013")
	if sel != nil || d.Subject.Start.Line != 15 || !strings.Contains(d.Summary, `declares dev, prod; did you mean "prod"?`) {
		t.Errorf("unknown env: %v %q at %v", sel, d.Summary, d.Subject)
	}
	if _, ds := f.Select(""); !strings.Contains(only(t, ds, "P013").Summary, "name one with --env") {
		t.Errorf("no env: %v", ds)
	}
	plain := mustLoad(t, envSpec[:strings.Index(envSpec, "environments:")])
	if sel, ds := plain.Select(""); sel != plain || len(ds) > 0 {
		t.Errorf("a spec without environments is itself: %v", ds)
	}
	if _, ds := plain.Select("prod"); !strings.Contains(only(t, ds, "P013").Summary, "declares no environments") {
		t.Errorf("env on a plain spec: %v", ds)
	}
}

// Environment names become part of AWS names: refused at the key like any other name.
func TestEnvironmentNames(t *testing.T) {
	src := strings.Replace(envSpec, "  dev: {}\n", "  Dev-1: {}\n", 1)
	_, ds := Load("fleet.yaml", []byte(src))
	if d := only(t, ds, "P007"); d.Subject.Start.Line != 16 {
		t.Errorf("bad env name at %v", d.Subject)
	}
}

// Alarm targets differ per environment: alarms.notify is an override the schema allows, and
// the selected environment carries it while the other keeps the spec's own.
func TestAlarmsNotifyPerEnvironment(t *testing.T) {
	src := strings.Replace(envSpec, "tags: { team: a }\n", "tags: { team: a }\nalarms: { notify: create }\n", 1) +
		"    alarms: { notify: arn:aws:sns:us-east-1:111122223333:oncall }\n"
	f := mustLoad(t, src)
	prod, ds := f.Select("prod")
	if ds.HasErrors() || prod == nil || prod.Fleet == nil {
		t.Fatalf("select prod: %v", ds)
	}
	if got := prod.Fleet.Alarms.Notify; got != "arn:aws:sns:us-east-1:111122223333:oncall" {
		t.Errorf("prod alarms.notify %q", got)
	}
	dev, ds := f.Select("dev")
	if ds.HasErrors() || dev == nil || dev.Fleet == nil {
		t.Fatalf("select dev: %v", ds)
	}
	if got := dev.Fleet.Alarms.Notify; got != "create" {
		t.Errorf("dev alarms.notify %q", got)
	}
}
