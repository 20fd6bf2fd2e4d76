package terraform

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/fleetc/fleetc/schemas/awslimits"
)

// retainedRule is the claim-check lifecycle rule expiring retained config objects in files,
// or nil.
func retainedRule(t *testing.T, h *hclFile) *hclsyntax.Block {
	t.Helper()
	lc := h.block(t, "resource", "aws_s3_bucket_lifecycle_configuration", "claimcheck")
	for _, r := range lc.Body.Blocks {
		if r.Type == "rule" && h.str(t, r, "id") == retainedConfigRule {
			return r
		}
	}
	return nil
}

// TestRetainedConfigsExpire: a fleet with a canary or linear lambda class expires the config
// objects `fleetc apply` put back, and only those (config prefix and the retained tag), after
// more than CodeDeploy's longest shift; TestRolloutValidates checks the rule's shape against
// the real provider.
func TestRetainedConfigsExpire(t *testing.T) {
	h := parseFiles(t, generate(t, lower(t, rolloutSpec)), "state.tf")
	r := retainedRule(t, h)
	if r == nil {
		t.Fatalf("no lifecycle rule %s: the config objects apply keeps for a shift never expire", retainedConfigRule)
	}
	and := h.blockIn(t, h.blockIn(t, r, "filter"), "and")
	if got := h.str(t, and, "prefix"); got != configPrefix {
		t.Errorf("retained rule prefix = %q, want %q", got, configPrefix)
	}
	want := `{"` + RetainedConfigTag + `"="` + RetainedConfigTagValue + `"}`
	if got := strings.Join(strings.Fields(h.src(and.Body.Attributes["tags"].Expr)), ""); got != want {
		t.Errorf("retained rule tags = %s, want %s", got, want)
	}
	days, err := strconv.Atoi(h.src(h.blockIn(t, r, "expiration").Body.Attributes["days"].Expr))
	if err != nil {
		t.Fatal(err)
	}
	// S3 rounds an expiry to a midnight UTC, so a day's margin past the longest shift.
	if life := time.Duration(days) * 24 * time.Hour; life < awslimits.CodeDeployLambdaMaxShift+24*time.Hour {
		t.Errorf("retained configs expire after %v: a shift may last %v", life, awslimits.CodeDeployLambdaMaxShift)
	}
}

// TestNoRetainedConfigsWithoutShift: a fleet without a canary or linear lambda class keeps no
// config object past its apply, so its lifecycle has no rule for them.
func TestNoRetainedConfigsWithoutShift(t *testing.T) {
	f := lower(t, fiveAsyncTools)
	for _, a := range f.Agents {
		if KeepsOldConfig(a) {
			t.Fatalf("class %s shifts traffic: pick a fleet without one", a.Name)
		}
	}
	if r := retainedRule(t, parseFiles(t, generate(t, f), "state.tf")); r != nil {
		t.Errorf("lifecycle rule %s in a fleet without a shift", retainedConfigRule)
	}
}
