package review

import (
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
