package review

import (
	"slices"
	"strings"
	"testing"
)

// The text report writes a change's detail only when there is one, and a Kubernetes
// resource's reasons only when it has some (a created manifest has none).
func TestTextReportLines(t *testing.T) {
	r := &Report{Base: "base.yaml", Head: "head.yaml",
		Changes: []Change{
			{Category: Posture, Severity: Info, Subject: "class x", Summary: "step.max: 1m → 2m"},
			{Category: Posture, Severity: Warning, Subject: "class x", Summary: "delivery.attempts: 24 → 185", Detail: "an outage stays silent longer"},
		},
		Resources: []ResourceChange{},
		Kubernetes: []ResourceChange{
			{Action: Update, Address: "k8s/x/deployment.yaml", Type: "k8s", Reasons: []string{"image"}},
			{Action: Create, Address: "k8s/y/scaledobject.yaml", Type: "k8s"},
		},
	}
	var b strings.Builder
	if err := r.Render(&b, "text"); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"\nposture info: class x: step.max: 1m → 2m\n\nposture warning: class x: delivery.attempts: 24 → 185\n    an outage stays silent longer\n",
		"\nKubernetes, predicted: 1 to create, 1 to update.\n  update k8s/x/deployment.yaml: image\n  create k8s/y/scaledobject.yaml\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text report lacks\n%s\ngot:\n%s", want, got)
		}
	}
}

// The markdown headline: the verdict's icon, Terraform's prediction unless a side did not
// build (then only when there is one), Kubernetes' only when some manifest changes.
func TestMarkdownHeadline(t *testing.T) {
	warn := Change{Category: Posture, Severity: Warning, Subject: "class x", Summary: "s"}
	kube := []ResourceChange{{Action: Update, Address: "k8s/x/deployment.yaml", Type: "k8s"}}
	for _, tc := range []struct {
		name string
		r    Report
		want string // the first line, then the second
	}{
		{"safe, no resources", Report{Changes: []Change{{Category: Posture, Severity: Info, Subject: "class x", Summary: "s"}}},
			"### ✅ fleetc diff: safe: 1 change, none risky\n\n`b` → `h` · Terraform, predicted: no resource changes\n\n"},
		{"needs review", Report{Changes: []Change{warn}, Resources: []ResourceChange{{Action: Create, Address: "aws_sqs_queue.x"}}},
			"### ⚠️ fleetc diff: needs review: 1 change to look at\n\n`b` → `h` · Terraform, predicted: 1 to create\n\n"},
		{"blocking, with manifests", Report{Changes: []Change{warn, {Category: Diagnostic, Severity: Error, Subject: "E001", Summary: "s"}}, Kubernetes: kube},
			"### 🛑 fleetc diff: blocking: 1 change to fix before merge\n\n`b` → `h` · Terraform, predicted: no resource changes · Kubernetes, predicted: 1 to update\n\n"},
		{"incomplete, nothing predicted", Report{Changes: []Change{warn}, Incomplete: "a side has errors"},
			"### ⚠️ fleetc diff: needs review: 1 change to look at\n\n`b` → `h`\n\n"},
		{"incomplete, but predicted", Report{Changes: []Change{warn}, Incomplete: "a side has errors", Resources: []ResourceChange{}},
			"### ⚠️ fleetc diff: needs review: 1 change to look at\n\n`b` → `h` · Terraform, predicted: no resource changes\n\n"},
	} {
		tc.r.Base, tc.r.Head = "b", "h"
		var b strings.Builder
		if err := tc.r.Render(&b, "markdown"); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), tc.want) {
			t.Errorf("%s: markdown starts\n%q\nwant\n%q", tc.name, b.String()[:min(len(b.String()), len(tc.want)+40)], tc.want)
		}
	}
}

// --fail-on over every condition, one change at a time: safe contract changes and resolved
// diagnostics (severity info) are for the record and trip nothing, not even "any"; info in any
// other category does; "breaking" is a contract change that breaks, "blocking" an error.
func TestFailOnTable(t *testing.T) {
	for _, tc := range []struct {
		c    Change
		true []string // the conditions it meets; every other one of FailOn it does not
	}{
		{Change{Category: Contract, Severity: Info}, nil},
		{Change{Category: Diagnostic, Severity: Info}, nil},
		{Change{Category: Posture, Severity: Info}, []string{string(Posture), FailAny}},
		{Change{Category: Capacity, Severity: Info}, []string{string(Capacity), FailAny}},
		{Change{Category: Contract, Severity: Warning}, []string{string(Contract), FailAny}},
		{Change{Category: Contract, Severity: Error, Breaks: "backward"}, []string{string(Contract), FailBreaking, FailBlocking, FailAny}},
		{Change{Category: Diagnostic, Severity: Warning}, []string{string(Diagnostic), FailAny}},
		{Change{Category: Security, Severity: Error}, []string{string(Security), FailBlocking, FailAny}},
		{Change{Category: Replacement, Severity: Warning}, []string{string(Replacement), FailAny}},
	} {
		r := &Report{Changes: []Change{tc.c}}
		for _, cond := range FailOn {
			if got, want := r.Has(cond), slices.Contains(tc.true, cond); got != want {
				t.Errorf("%s %s (breaks %q): --fail-on %s = %v, want %v", tc.c.Category, tc.c.Severity, tc.c.Breaks, cond, got, want)
			}
		}
	}
	// A record-only change before a real one does not hide it.
	r := &Report{Changes: []Change{{Category: Contract, Severity: Info}, {Category: Posture, Severity: Warning}}}
	if !r.Has(string(Posture)) || !r.Has(FailAny) || r.Has(string(Contract)) {
		t.Errorf("info contract then posture warning: posture %v any %v contract %v", r.Has(string(Posture)), r.Has(FailAny), r.Has(string(Contract)))
	}
}
