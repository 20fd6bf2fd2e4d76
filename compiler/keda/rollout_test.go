package keda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/internal/verifytest"
)

// TestRolloutDeployment: an eks class's rollout is its Deployment's RollingUpdate: never
// below the running pods (maxUnavailable 0), percent of the pods at a time (maxSurge "25%"),
// each batch ready for the interval before the next (minReadySeconds 60); kubeconform
// -strict accepts it.
func TestRolloutDeployment(t *testing.T) {
	f := lower(t, "../terraform/testdata/rollout/fleet.yaml")
	set := generate(t, f)
	b, ok := set.Get("k8s/archive/deployment.yaml")
	if !ok {
		t.Fatalf("no deployment for archive: %v", set.Paths())
	}
	dep := string(b)
	for _, want := range []string{"minReadySeconds: 60\n", "progressDeadlineSeconds: 660\n", "maxSurge: 25%\n", "maxUnavailable: 0\n", "type: RollingUpdate\n"} {
		if !strings.Contains(dep, want) {
			t.Errorf("deployment lacks %q:\n%s", want, dep)
		}
	}
	p := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err := verifytest.Kubeconform(p)
	if errors.Is(err, verifytest.ErrToolMissing) {
		t.Skipf("SKIPPING kubeconform: %v", err)
	}
	if err != nil {
		t.Error(err)
	}
}

// TestNoRolloutOnePodAtATime: without a rollout the Deployment keeps surging one pod at a
// time and sets no minReadySeconds (byte-identical to before rollouts existed).
func TestNoRolloutOnePodAtATime(t *testing.T) {
	for _, c := range cases(t) {
		for _, file := range generate(t, c.f).Files() {
			if !strings.HasSuffix(file.Path, "deployment.yaml") {
				continue
			}
			if s := string(file.Bytes); !strings.Contains(s, "maxSurge: 1\n") || strings.Contains(s, "minReadySeconds") {
				t.Errorf("%s %s: want maxSurge 1 and no minReadySeconds", c.name, file.Path)
			}
		}
	}
}
