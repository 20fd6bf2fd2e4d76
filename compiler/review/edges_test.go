package review

import (
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/ir"
)

// A class moved to another model policy is a posture change naming both policies (news, not a
// warning: the policies' own settings are compared apart).
func TestClassModelChange(t *testing.T) {
	base := research(t)
	head := edit(t, base, "    model: claude-haiku-then-sonnet\n    handler: { http:", "    model: sonnet-overflow\n    handler: { http:")
	r := review(t, base, head)
	got := find(r, Posture, "model: ")
	if len(got) != 1 || got[0].Subject != "class coder" || got[0].Summary != "model: claude-haiku-then-sonnet → sonnet-overflow" || got[0].Severity != Info {
		t.Errorf("want one info change of class coder's model, got %+v", got)
	}
}

// The text report's Terraform line: there whenever both sides built (even with nothing to
// change), absent when a side did not and nothing was predicted. The Kubernetes section only
// when a manifest changes, one is enough.
func TestTextReportSections(t *testing.T) {
	for _, tc := range []struct {
		name      string
		r         Report
		terraform bool
	}{
		{"complete, no resource changes", Report{}, true},
		{"complete, a resource created", Report{Resources: []ResourceChange{{Action: Create, Address: "aws_sqs_queue.x"}}}, true},
		{"incomplete, nothing predicted", Report{Incomplete: "a side has errors"}, false},
	} {
		tc.r.Base, tc.r.Head = "b", "h"
		tc.r.Changes = []Change{{Category: Posture, Severity: Info, Subject: "class x", Summary: "s"}}
		var b strings.Builder
		if err := tc.r.Render(&b, "text"); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "\nTerraform, predicted: "); got != tc.terraform {
			t.Errorf("%s: Terraform line %v, want %v:\n%s", tc.name, got, tc.terraform, b.String())
		}
		if strings.Contains(b.String(), "Kubernetes") {
			t.Errorf("%s: a Kubernetes section without manifests:\n%s", tc.name, b.String())
		}
	}
	r := Report{Base: "b", Head: "h", Kubernetes: []ResourceChange{{Action: Create, Address: "ConfigMap/fleet/coder", Type: "k8s"}}}
	var b strings.Builder
	if err := r.Render(&b, "text"); err != nil {
		t.Fatal(err)
	}
	if want := "\nKubernetes, predicted: 1 to create.\n  create ConfigMap/fleet/coder\n"; !strings.Contains(b.String(), want) {
		t.Errorf("one manifest: no Kubernetes section %q:\n%s", want, b.String())
	}
}

// The markdown's topology shows the changed parts of the head, a lone one too (a policy no
// class uses); changes whose parts are not in the head (a removed class) draw no empty
// diagram.
func TestMarkdownTopologyOnlyOfHeadParts(t *testing.T) {
	s := Load("research.yaml", []byte(research(t)))
	if s.Fleet == nil {
		t.Fatalf("the research example does not build: %v", s.Diags)
	}
	lone := &ir.Fleet{Models: []*ir.Model{{Name: "spare"}}}
	for _, tc := range []struct {
		fleet   *ir.Fleet
		node    string
		diagram bool
	}{
		{s.Fleet, graph.NodeKey(graph.Class, "coder"), true},
		{lone, graph.NodeKey(graph.Model, "spare"), true},
		{s.Fleet, graph.NodeKey(graph.Class, "gone"), false},
	} {
		r := &Report{Base: "b", Head: "h", headGraph: graph.Build(tc.fleet),
			Changes: []Change{{Category: Posture, Severity: Info, Subject: "class x", Summary: "s", nodes: []string{tc.node}}}}
		var b strings.Builder
		if err := r.Render(&b, "markdown"); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "```mermaid"); got != tc.diagram {
			t.Errorf("%s: diagram %v, want %v:\n%s", tc.node, got, tc.diagram, b.String())
		}
	}
}

// A change without a spec path (a resource fleetc's inventory does not own) has no position,
// not the spec's first line; a side without an index (an absent base) positions nothing.
func TestLocate(t *testing.T) {
	s := Load("research.yaml", []byte(research(t)))
	if s.Fleet == nil || s.Fleet.Index == nil {
		t.Fatalf("the research example does not build: %v", s.Diags)
	}
	var c Change
	locate(&c, s, "")
	if c.Position != nil {
		t.Errorf("no path: position %v", c.Position)
	}
	locate(&c, s, "/agents/coder")
	if c.Position == nil || c.Position.Start.Line != 110 {
		t.Errorf("/agents/coder: position %v, want line 110", c.Position)
	}
	c = Change{}
	locate(&c, &Side{Name: "x", Fleet: &ir.Fleet{}}, "/agents/coder")
	if c.Position != nil {
		t.Errorf("no index: position %v", c.Position)
	}
}

// An existing statement that grants one more action, or one more resource, is a widening.
func TestSecurityActionAndResourceAdded(t *testing.T) {
	side := func(actions, resources string) (*Side, map[string]*resource) {
		set := moduleSet(t, artifact.Block{Kind: artifact.KindData, Type: "aws_iam_policy_document", Name: "reader", File: "terraform/iam.tf",
			Attrs: []artifact.Attr{
				{Path: "statement.0.sid", Src: `"Read"`},
				{Path: "statement.0.effect", Src: `"Allow"`},
				{Path: "statement.0.actions", Src: "[" + actions + "]"},
				{Path: "statement.0.resources", Src: "[" + resources + "]"},
			}})
		return &Side{Name: "x", Fleet: &ir.Fleet{}, Files: set}, moduleResources(set)
	}
	base, btf := side(`"sqs:ReceiveMessage"`, `aws_sqs_queue.a.arn`)
	for _, tc := range []struct {
		actions, resources string
		want               []string
	}{
		{`"sqs:ReceiveMessage"`, `aws_sqs_queue.a.arn`, nil},
		{`"sqs:ReceiveMessage", "sqs:DeleteMessage"`, `aws_sqs_queue.a.arn`, []string{`actions added: "sqs:DeleteMessage"`}},
		{`"sqs:ReceiveMessage"`, `aws_sqs_queue.a.arn, aws_sqs_queue.b.arn`, []string{"resources added: aws_sqs_queue.b.arn"}},
		{`"sqs:ReceiveMessage", "sqs:DeleteMessage"`, `aws_sqs_queue.a.arn, aws_sqs_queue.b.arn`, []string{`actions added: "sqs:DeleteMessage"; resources added: aws_sqs_queue.b.arn`}},
		{`"sqs:DeleteMessage"`, `aws_sqs_queue.a.arn`, []string{`actions added: "sqs:DeleteMessage"`}},
	} {
		head, htf := side(tc.actions, tc.resources)
		var got []string
		for _, c := range securityChanges(btf, htf, base, head) {
			got = append(got, c.Detail)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("actions [%s] on [%s]: got %q, want %q", tc.actions, tc.resources, got, tc.want)
		}
	}
}

// moduleSet is a set whose Terraform module holds blocks, as the backend records them.
func moduleSet(t *testing.T, blocks ...artifact.Block) *artifact.Set {
	t.Helper()
	set, err := artifact.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	set.SetModule(artifact.Module{Blocks: blocks})
	return set
}

// Only resource and data blocks are resources of the plan; outputs are not.
func TestModuleResourcesBlocks(t *testing.T) {
	tf := moduleResources(moduleSet(t,
		artifact.Block{Kind: artifact.KindResource, Type: "aws_sqs_queue", Name: "q", Attrs: []artifact.Attr{{Path: "name", Src: `"q"`}}},
		artifact.Block{Kind: artifact.KindData, Type: "aws_caller_identity", Name: "current"},
		artifact.Block{Kind: artifact.KindOutput, Name: "queue", Attrs: []artifact.Attr{{Path: "value", Src: "aws_sqs_queue.q.arn"}}},
	))
	var got []string
	for addr := range tf {
		got = append(got, addr)
	}
	slices.Sort(got)
	if want := []string{"aws_sqs_queue.q", "data.aws_caller_identity.current"}; !slices.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
}

// An argument's references are the blocks' attributes it reads ("address.attribute"), sorted;
// path.module, variables and locals are not blocks. Its inputs are the generated files it
// reads, sorted.
func TestModuleResourcesRefsAndInputs(t *testing.T) {
	src := `jsonencode({ b = file("${path.module}/../b.json"), a = file("${path.module}/../a.json"), q = aws_sqs_queue.q.url, r = data.aws_region.current.name, v = var.x })`
	span := func(text string) artifact.Span {
		i := strings.Index(src, text)
		return artifact.Span{Text: text, Start: i, End: i + len(text)}
	}
	tf := moduleResources(moduleSet(t, artifact.Block{Kind: artifact.KindResource, Type: "aws_x", Name: "y", Attrs: []artifact.Attr{{
		Path: "a", Src: src,
		Refs: []artifact.Span{span("path.module"), span("aws_sqs_queue.q.url"), span("data.aws_region.current.name"), span("var.x")},
		Inputs: []artifact.Input{
			{Func: "file", File: "b.json", Span: span("/../b.json")},
			{Func: "file", File: "a.json", Span: span("/../a.json")},
		},
	}}}))
	r := tf["aws_x.y"]
	if want := []string{"aws_sqs_queue.q.url", "data.aws_region.current.name"}; !slices.Equal(r.Refs["a"], want) {
		t.Errorf("refs %v, want %v", r.Refs["a"], want)
	}
	if want := []string{"a.json", "b.json"}; !slices.Equal(r.Inputs["a"], want) {
		t.Errorf("inputs %v, want %v", r.Inputs["a"], want)
	}
	if r.Attrs["a"] != src {
		t.Errorf("source %q", r.Attrs["a"])
	}
}
