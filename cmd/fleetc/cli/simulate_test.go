package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fleetc simulate end to end: the docs' fleet and wave print JSON with the Interface's top
// level; a scenario naming a policy the fleet lacks is refused at its line (exit 1); a spec
// without traffic says how to give it one (exit 2).
func TestSimulateCommand(t *testing.T) {
	fleet := filepath.Join("..", "..", "..", "docs", "simulate", "fleet.yaml")
	code, out, errb := run(t, "simulate", fleet, "--scenario", filepath.Join("..", "..", "..", "docs", "simulate", "wave.yaml"), "--duration", "25m", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var doc struct {
		DurationSeconds float64 `json:"duration_seconds"`
		Classes         []struct {
			Name string `json:"name"`
		} `json:"classes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.DurationSeconds != 1500 || len(doc.Classes) != 2 {
		t.Errorf("JSON %v: %+v", err, doc)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("faults:\n  - {at: 1m, for: 1m, throttle: {policy: sonnet}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errb = run(t, "simulate", fleet, "--scenario", bad)
	if code != exitInvalid || !strings.Contains(errb, "bad.yaml:2:42: faults[0].throttle.policy: the fleet has no \"sonnet\"") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}

	code, _, errb = run(t, "simulate", filepath.Join("..", "..", "..", "examples", "minimal", "fleet.yaml"))
	if code != exitUsage || !strings.Contains(errb, "no traffic to simulate") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}
