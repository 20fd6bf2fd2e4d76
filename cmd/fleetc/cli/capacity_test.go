package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestCapacityCommand(t *testing.T) {
	const research = "../../../examples/research-fleet/fleet.yaml"
	code, out, errs := run(t, "capacity", research, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Traffic struct {
			ConversationsPerMinute float64 `json:"conversations_per_minute"`
		} `json:"traffic"`
		Seed struct {
			StepsPerMinute float64 `json:"steps_per_minute"`
		} `json:"seed_model"`
		First *struct{ Name string } `json:"first_quota_to_break"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r.Seed.StepsPerMinute != 7500 || r.First == nil {
		t.Errorf("research example: %+v", r)
	}

	// Flags override the spec's traffic; --scale multiplies the result.
	code, out, _ = run(t, "capacity", research, "--format", "json", "--conversations-per-minute", "100", "--scale", "3")
	if err := json.Unmarshal([]byte(out), &r); code != exitOK || err != nil || r.Traffic.ConversationsPerMinute != 300 || r.Seed.StepsPerMinute != 4500 {
		t.Errorf("overrides: exit %d, %+v", code, r)
	}

	code, out, _ = run(t, "capacity", research, "--format", "markdown")
	for _, want := range []string{"## Capacity of fleet research in us-east-1", "| quota | for | usage | limit | headroom | rule |", "Estimated monthly cost"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q (exit %d):\n%s", want, code, out)
		}
	}

	for _, bad := range [][]string{
		{"--conversations-per-minute", "-1"},
		{"--scale", "0"},
		{"--scale", "NaN"},
		{"--steps-per-conversation", "+Inf"},
		{"--step-duration", "-5s"},
		{"--concurrent-conversations", "1.5"},
	} {
		code, out, errs := run(t, append([]string{"capacity", research}, bad...)...)
		if code != exitUsage || out != "" || !strings.Contains(errs, strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want a usage error naming the flag", bad, code, out, errs)
		}
	}
}

// TestCapacityDocExample: docs/capacity.md shows the research example's report as the
// command prints it now.
func TestCapacityDocExample(t *testing.T) {
	code, out, errs := run(t, "capacity", "../../../examples/research-fleet/fleet.yaml", "--format", "markdown")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	doc, err := os.ReadFile("../../../docs/capacity.md")
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "<!-- capacity:research -->\n", "<!-- /capacity:research -->"
	s := string(doc)
	i, j := strings.Index(s, open), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/capacity.md lacks the %q … %q block", open, end)
	}
	if got := s[i+len(open) : j]; got != out {
		t.Errorf("docs/capacity.md's research report is stale; paste the output of `fleetc capacity examples/research-fleet/fleet.yaml --format markdown` between the markers")
	}
}
