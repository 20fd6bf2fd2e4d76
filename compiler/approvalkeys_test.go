package compiler_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
)

// The approval records hold task tokens, and a workflow's classes may answer its tokens
// (SendTaskSuccess for their callback steps): every worker role of a fleet with approvals is
// kept off the approval keys of the idempotency table (dynamodb:LeadingKeys not approval#*),
// and the recorder may write only those keys, and only the approval steps' notify events.
func TestWorkersCannotReadApprovalTokens(t *testing.T) {
	res, err := compiler.Compile(compiler.Input{Path: "../examples/approvals/fleet.yaml"})
	if err != nil || res.Files == nil || res.Diagnostics.HasErrors() {
		t.Fatalf("%v %v", err, res.Diagnostics)
	}
	statement := func(file, sid string) string {
		t.Helper()
		b, ok := res.Files.Get(file)
		if !ok {
			t.Fatalf("no %s", file)
		}
		src := string(b)
		i := strings.Index(src, `sid       = "`+sid+`"`)
		if i < 0 {
			t.Fatalf("%s has no statement %s", file, sid)
		}
		end := strings.Index(src[i:], "\n  }\n")
		return src[i : i+end]
	}
	notApprovals := regexp.MustCompile(`test\s+= "ForAllValues:StringNotLike"\s+variable = "dynamodb:LeadingKeys"\s+values\s+= \["approval#\*"\]`)
	workers := 0
	for _, f := range res.Files.Paths() {
		if !strings.HasPrefix(f, "terraform/agent_") {
			continue
		}
		workers++
		if s := statement(f, "IdempotencyClaims"); !notApprovals.MatchString(s) {
			t.Errorf("%s: the worker role may read approval tokens:\n%s", f, s)
		}
	}
	if workers == 0 {
		t.Fatal("no worker roles")
	}
	onlyApprovals := regexp.MustCompile(`test\s+= "ForAllValues:StringLike"\s+variable = "dynamodb:LeadingKeys"\s+values\s+= \["approval#\*"\]`)
	if s := statement("terraform/workflows.tf", "RecordApprovalTokens"); !onlyApprovals.MatchString(s) {
		t.Errorf("the recorder may write other keys:\n%s", s)
	}
	if s := statement("terraform/workflows.tf", "AnnounceApprovals"); !strings.Contains(s, `"events:source"`) || !strings.Contains(s, `"refund.approval.requested"`) {
		t.Errorf("the recorder may put other events:\n%s", s)
	}
}
