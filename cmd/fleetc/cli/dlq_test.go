package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
)

// Without --auto-approve, redrive asks before moving and again after a passing canary (one
// stdin, read without buffering ahead, answers both).
func TestRedriveAsksTwice(t *testing.T) {
	f := dlqtest.New(t, "")
	t.Chdir(filepath.Dir(f.Spec))
	stop := f.StartWorker(t, "solver")
	for i := 1; i <= 3; i++ {
		f.DeadLetter(t, "solver", dlqtest.Event(fmt.Sprintf("ev-bad-%d", i), map[string]any{"trace_id": fmt.Sprintf("t-%d", i), "job": fmt.Sprintf("bad-%d", i), "conversation_id": "c1"}), "")
	}
	stop()
	f.Handler.Fix()
	f.StartWorker(t, "solver")
	var out bytes.Buffer
	code := Main([]string{"dlq", "redrive", "fleet.yaml", "solver", "--canary", "1", "--endpoint", f.Endpoint}, strings.NewReader("yes\nyes\n"), &out, &out)
	got := out.String()
	for _, want := range []string{
		"Redrive every dead letter to " + f.Targets["solver"].Queue + ", one at a time at 10/s, 1 canary first.",
		"Do you want to move them? Only 'yes' will be accepted.",
		"canary: 1 completed, 0 back in the DLQ, 0 pending",
		"The canary passed. Move the other 2? Only 'yes' will be accepted.",
		"  moved 2/2\ndone: 3 moved",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	f.WaitDepth(t, "solver", true, 0, 5*time.Second)
}
