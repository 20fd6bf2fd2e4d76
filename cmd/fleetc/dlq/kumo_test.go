package dlq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
	"github.com/fleetc/fleetc/runtime/wire"
)

// poison makes the real fleet-worker dead-letter 3 jobs as BadOutput (the handler's bug) and
// 2 bodies as MalformedMessage, and completes 1 good job.
func poison(t *testing.T, f *dlqtest.Fleet) {
	t.Helper()
	stop := f.StartWorker(t, "solver")
	for i := range 3 {
		f.Send(t, "solver", dlqtest.Event(fmt.Sprintf("ev-bad-%d", i), map[string]any{"trace_id": fmt.Sprintf("t-bad-%d", i), "job": fmt.Sprintf("bad-%d", i), "conversation_id": "c1"}), "")
	}
	f.Send(t, "solver", "not json at all", "")
	f.Send(t, "solver", "{truncated", "")
	f.Send(t, "solver", dlqtest.Event("ev-good", map[string]any{"trace_id": "t-good", "job": "good", "conversation_id": "c1"}), "")
	f.WaitDepth(t, "solver", true, 5, 30*time.Second)
	f.WaitDepth(t, "solver", false, 0, 30*time.Second)
	stop()
}

func TestInspectGroupsByErrorCode(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	poison(t, f)
	ctx := context.Background()
	targets := []*dlq.Target{f.Targets["solver"], f.Targets["chat"]}
	before := time.Now()
	r, err := dlq.Inspect(ctx, f.SQS, f.Name, targets, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := r.Classes[0]
	if c.Class != "solver" || c.Depth != 5 || c.InFlight != 0 || c.Peeked != 5 || !c.Complete || c.Incomplete != "" {
		t.Fatalf("solver: %+v", c)
	}
	if len(c.Codes) != 2 || c.Codes[0].Code != wire.BadOutput || c.Codes[0].Count != 3 || c.Codes[1].Code != wire.MalformedMessage || c.Codes[1].Count != 2 {
		t.Fatalf("groups: %+v", c.Codes)
	}
	g := c.Codes[0]
	if g.FirstSeen.After(g.LastSeen) || g.LastSeen.After(before) || g.Sample.Attempts != 1 || g.Sample.Message == "" || g.Sample.MessageID == "" {
		t.Errorf("BadOutput group: %+v", g)
	}
	if c.OldestAgeSeconds == nil || *c.OldestAgeSeconds < 0 || *c.OldestAgeSeconds > 60 {
		t.Errorf("oldest age: %v", c.OldestAgeSeconds)
	}
	if ch := r.Classes[1]; ch.Class != "chat" || ch.Peeked != 0 || len(ch.Codes) != 0 || !ch.Complete {
		t.Errorf("chat: %+v", ch)
	}
	// Peeking consumed nothing, and released what it held at once: a second peek, right
	// after, sees every dead letter again.
	r2, err := dlq.Inspect(ctx, f.SQS, f.Name, targets[:1], 0, time.Now())
	if err != nil || r2.Classes[0].Peeked != 5 || !r2.Classes[0].Complete {
		t.Fatalf("second peek: %+v %v", r2.Classes[0], err)
	}
	// A limit below the depth says the peek is incomplete.
	r3, err := dlq.Inspect(ctx, f.SQS, f.Name, targets[:1], 2, time.Now())
	if err != nil || r3.Classes[0].Complete || r3.Classes[0].Peeked != 2 || r3.Classes[0].Incomplete == "" {
		t.Fatalf("limited peek: %+v %v", r3.Classes[0], err)
	}
}
