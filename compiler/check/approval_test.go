package check

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

// S013: an approval waits for a task token, which only a standard workflow can.
func TestApprovalOnlyInStandard(t *testing.T) {
	for _, typ := range []string{"standard", "express"} {
		f := lowerSrc(t, fleetWith(1)+strings.Replace(approvalSrc, "  w:\n", "  w:\n    type: "+typ+"\n", 1))
		got := findings(f, "S013")
		if typ == "standard" && len(got) != 0 {
			t.Errorf("standard: S013 fires: %v", got)
		}
		if typ == "express" && (len(got) != 1 || got[0].Path != "/workflows/w/steps/1/approval") {
			t.Errorf("express: S013 = %v, want one at /workflows/w/steps/1/approval", got)
		}
	}
}

// Lowering: notify must name a declared event (P005 at the notify value), an approval step
// has no agent settings, and on_timeout defaults to fail.
func TestApprovalLowering(t *testing.T) {
	f := lowerSrc(t, fleetWith(1)+approvalSrc)
	ap := f.Workflows[0].Steps[1].Approval
	if ap == nil || ap.Notify != f.Event("task.requested") || ap.OnTimeout != spec.OnTimeoutFail || f.Workflows[0].Steps[1].Agent != nil {
		t.Fatalf("approval lowered to %+v", ap)
	}
	for _, c := range []struct{ edit, code, path string }{
		{"notify: task.requested", "P005", "/workflows/w/steps/1/approval/notify"},
		{"name: Ok\n", "P008", "/workflows/w/steps/1"},
	} {
		bad := strings.Replace(approvalSrc, c.edit, map[string]string{"P005": "notify: task.requestd", "P008": "name: Ok\n        agent: a000\n"}[c.code], 1)
		file, ds := spec.Load("fleet.yaml", []byte(fleetWith(1)+bad))
		if ds.HasErrors() {
			t.Fatalf("load: %v", ds)
		}
		_, ds = ir.Lower(file)
		found := false
		for _, d := range ds {
			if d.Code == c.code && d.Path == c.path && d.Subject != nil && d.Subject.Start.Line > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: no %s at %s with a position: %v", c.edit, c.code, c.path, ds)
		}
	}
}
