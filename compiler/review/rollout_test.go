package review

import (
	"os"
	"strings"
	"testing"
)

// rollouts returns the rollout findings by subject.
func rollouts(r *Report) map[string]Change {
	out := map[string]Change{}
	for _, c := range r.Changes {
		if c.Category == Rollout {
			out[c.Subject] = c
		}
	}
	return out
}

func readSpec(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRolloutPerClass: a new worker image changes every class; fleetc diff says how each
// one's new version takes traffic, from its rollout, and leaves the unchanged workflows out.
func TestRolloutPerClass(t *testing.T) {
	base := readSpec(t, "../terraform/testdata/rollout/fleet.yaml")
	head := edit(t, base, "fleet-worker:0.1.0", "fleet-worker:0.2.0")
	got := rollouts(review(t, base, head))
	want := map[string]string{
		"class classify": "alias live stays on the running one until a CodeDeploy deployment shifts it: canary 10% for 5m, then the rest",
		"class enrich":   "linear 20% more every 2m",
		"class tag":      "shifts it: all at once",
		"class archive":  "new pods roll out 25% of the pods at a time, each batch ready for 1m",
	}
	for subject, s := range want {
		c, ok := got[subject]
		if !ok || !strings.Contains(c.Summary, s) || c.Severity != Info {
			t.Errorf("%s: %+v, want info containing %q", subject, c, s)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rollout findings %v, want only the four classes", got)
	}
	if c := got["class classify"]; !strings.Contains(c.Detail, "deployment group triage-classify, config triage-canary-10pct-5m") {
		t.Errorf("classify detail: %q", c.Detail)
	}
}

// TestRolloutConfigChange: a canary class whose runtime config changes keeps the running
// version's config object through apply (an info saying so); an all-at-once class loses it
// before its deployment starts: a warning.
func TestRolloutConfigChange(t *testing.T) {
	base := readSpec(t, "../terraform/testdata/rollout/fleet.yaml")
	head := edit(t, base, `handler: { exec: ["/app/classify"] }`, `handler: { exec: ["/app/classify", "--v2"] }`)
	head = edit(t, head, `handler: { exec: ["/app/tag"] }`, `handler: { exec: ["/app/tag", "--v2"] }`)
	got := rollouts(review(t, base, head))
	if c, ok := got["class classify"]; !ok || c.Severity != Info || !strings.Contains(c.Detail, "fleetc apply puts it back") {
		t.Errorf("classify: %+v", c)
	}
	if c, ok := got["class tag"]; !ok || c.Severity != Warning || !strings.Contains(c.Detail, "deletes the config object the running version reads") {
		t.Errorf("tag: %+v", c)
	}
}

// TestNoRolloutInPlace: without rollout, a changed function and state machine are updated in
// place, and the finding says so.
func TestNoRolloutInPlace(t *testing.T) {
	base := readSpec(t, "../../examples/express-triage/fleet.yaml")
	head := edit(t, base, "fleet-worker:0.1.0", "fleet-worker:0.2.0",
		"      - { agent: classify, timeout: 1m, retries: 1 }", "      - { agent: classify, timeout: 2m, retries: 1 }")
	got := rollouts(review(t, base, head))
	if c := got["class classify"]; !strings.Contains(c.Summary, "updated in place: all traffic at once") {
		t.Errorf("classify: %+v", c)
	}
	if c := got["workflow quick-triage"]; !strings.Contains(c.Summary, "updated in place: new executions start on the new definition") {
		t.Errorf("quick-triage: %+v", c)
	}
}
