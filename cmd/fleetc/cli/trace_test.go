package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/runtime/wire"
)

// A real fleet-worker on kumo completes one event of conversation conv-1 and dead-letters
// another (the handler's bug); fleetc trace conv-1 shows both paths, oldest first, and
// nothing of another conversation.
func TestTraceShowsCompletedAndDeadLettered(t *testing.T) {
	f := dlqtest.New(t, "")
	t.Chdir(filepath.Dir(f.Spec))
	stop := f.StartWorker(t, "solver")
	f.Send(t, "solver", dlqtest.Event("ev-good", map[string]any{"trace_id": "conv-1", "job": "good", "conversation_id": "c1"}), "")
	f.WaitDepth(t, "solver", false, 0, 30*time.Second)
	time.Sleep(1100 * time.Millisecond) // records and letters carry whole seconds: keep the order visible
	f.DeadLetter(t, "solver", dlqtest.Event("ev-bad", map[string]any{"trace_id": "conv-1", "job": "bad-1", "conversation_id": "c1"}), "")
	f.Send(t, "solver", dlqtest.Event("ev-other", map[string]any{"trace_id": "conv-2", "job": "other", "conversation_id": "c2"}), "")
	f.DeadLetter(t, "solver", dlqtest.Event("ev-other-bad", map[string]any{"trace_id": "conv-2", "job": "bad-2", "conversation_id": "c2"}), "")
	f.WaitDepth(t, "solver", false, 0, 30*time.Second)
	stop()

	var out, errb bytes.Buffer
	if code := Main([]string{"trace", "conv-1", "fleet.yaml", "--endpoint", f.Endpoint, "--format", "json"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var tl trace.Timeline
	if err := json.Unmarshal(out.Bytes(), &tl); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(tl.Entries) != 2 {
		t.Fatalf("entries: %+v", tl.Entries)
	}
	done, dead := tl.Entries[0], tl.Entries[1]
	if done.Source != trace.SourceRecord || done.Where != "solver" || done.ID != "ev-good" || done.What != "done" {
		t.Errorf("first entry: %+v, want solver's done record of ev-good", done)
	}
	if dead.Source != trace.SourceDLQ || dead.Where != "solver" || dead.What != string(wire.BadOutput) || dead.Time.Before(done.Time) {
		t.Errorf("second entry: %+v, want solver's BadOutput dead letter after the record", dead)
	}
	// The same reads print the same text.
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	var a, b bytes.Buffer
	Main([]string{"trace", "conv-1", "fleet.yaml", "--endpoint", f.Endpoint, "--since", since}, nil, &a, &errb)
	Main([]string{"trace", "conv-1", "fleet.yaml", "--endpoint", f.Endpoint, "--since", since}, nil, &b, &errb)
	if a.String() != b.String() || !strings.Contains(a.String(), "trace conv-1 since ") || !strings.Contains(a.String(), "BadOutput") || strings.Contains(a.String(), "ev-other") {
		t.Errorf("text:\n%s\nthen:\n%s", a.String(), b.String())
	}
}
