package dlq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
	"github.com/fleetc/fleetc/runtime/wire"
)

// redriveBound is the wall time a redrive of a handful of letters on kumo must end within:
// the moves at 100/s, a receive of 1 s that finds nothing new, the settle and a peek.
const redriveBound = 20 * time.Second

// redriveAll is what `fleetc dlq redrive` without a filter does on kumo: one session moves
// every letter, then tallies. ctx bounds it, so a redrive that loops fails instead of hanging.
func redriveAll(t *testing.T, f *dlqtest.Fleet, class string) ([]dlq.Moved, *dlq.Result, time.Duration) {
	t.Helper()
	tg := f.Targets[class]
	ctx, cancel := context.WithTimeout(context.Background(), redriveBound)
	defer cancel()
	start := time.Now()
	s := dlq.NewSession()
	moved, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Rate: 100, Session: s})
	if err != nil {
		t.Fatalf("move: %d moved in %s, %v", len(moved), time.Since(start).Round(time.Millisecond), err)
	}
	r, err := s.Tally(ctx, f.SQS, tg, dlq.DefaultSettle)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took > redriveBound {
		t.Fatalf("the redrive took %s (bound %s)", took, redriveBound)
	}
	return moved, r, took
}

// A letter that fails fast on every trip (the handler's bug, not fixed) comes back to the DLQ
// under a new message id while the redrive still runs: one invocation moves it once, reports
// it as failed again, and ends.
func TestRedrivePoisonMovesOnce(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	f.StartWorker(t, "solver")
	f.DeadLetter(t, "solver", dlqtest.Event("ev-bad-p", map[string]any{"trace_id": "t-p", "job": "bad-p", "conversation_id": "c1"}), "")
	moved, r, took := redriveAll(t, f, "solver")
	t.Logf("poison redrive: %s in %s", r, took.Round(time.Millisecond))
	if len(moved) != 1 || r.Moved != 1 || r.FailedAgain != 1 || r.Left != 0 {
		t.Fatalf("moved %d, result %+v", len(moved), r)
	}
	if g := r.FailedAgainCodes; len(g) != 1 || g[0].Code != wire.BadOutput || g[0].Count != 1 {
		t.Errorf("failed again: %+v", g)
	}
	f.WaitDepth(t, "solver", true, 1, 5*time.Second) // back once, and still there
}

// Good letters (the handler fixed) and poison (bodies that are not JSON) in one DLQ: one
// invocation moves each once; the good ones complete once each, the poison fails again and
// stays.
func TestRedriveMixOfGoodAndPoison(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	poison(t, f) // 3 BadOutput, 2 MalformedMessage
	f.Handler.Fix()
	f.StartWorker(t, "solver")
	moved, r, took := redriveAll(t, f, "solver")
	t.Logf("mixed redrive: %s in %s", r, took.Round(time.Millisecond))
	if len(moved) != 5 || r.Moved != 5 || r.FailedAgain != 2 || r.Left != 0 {
		t.Fatalf("moved %d, result %+v", len(moved), r)
	}
	if g := r.FailedAgainCodes; len(g) != 1 || g[0].Code != wire.MalformedMessage || g[0].Count != 2 {
		t.Errorf("failed again: %+v", g)
	}
	done, _ := f.Handler.Done()
	for i := range 3 {
		if n := done[fmt.Sprintf("ev-bad-%d", i)]; n != 1 {
			t.Errorf("bad-%d completed %d times", i, n)
		}
	}
	f.WaitDepth(t, "solver", true, 2, 5*time.Second)
}

// A letter moved by an earlier invocation and back in the DLQ is an ordinary letter to the
// next one: the stamp names its invocation, not the letter alone.
func TestNextRedriveMovesWhatCameBack(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	f.StartWorker(t, "solver")
	f.DeadLetter(t, "solver", dlqtest.Event("ev-bad-n", map[string]any{"trace_id": "t-n", "job": "bad-n", "conversation_id": "c1"}), "")
	_, r, _ := redriveAll(t, f, "solver")
	if r.FailedAgain != 1 {
		t.Fatalf("first redrive: %+v", r)
	}
	f.Handler.Fix()
	moved, r, _ := redriveAll(t, f, "solver")
	if len(moved) != 1 || r.Moved != 1 || r.FailedAgain != 0 || r.Left != 0 {
		t.Fatalf("second redrive: moved %d, %+v", len(moved), r)
	}
	f.WaitDepth(t, "solver", true, 0, 5*time.Second)
}

// A canary that no worker picks up (none runs) has no outcome at the timeout: pending, and
// not a pass.
func TestPendingCanaryIsNotAPass(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	poison(t, f)
	tg := f.Targets["solver"]
	ctx := context.Background()
	moved, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Code: wire.BadOutput, Max: 1, Rate: 100})
	if err != nil || len(moved) != 1 {
		t.Fatalf("canary: %d moved, %v", len(moved), err)
	}
	v, err := dlq.Watch(ctx, f.SQS, records(f, tg), tg, moved, 200*time.Millisecond, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v.OK() || v.Pending != 1 || v.Completed != 0 || v.Failed != 0 {
		t.Fatalf("a pending canary: OK %t, verdict %+v", v.OK(), v)
	}
}

// A producer that used 6 attributes besides traceparent leaves the worker no room for the
// stamp when it dead-letters the copy again (10 per message, its diagnosis first): the body
// the session moved still keeps the redrive from moving the letter twice. Unstamped, it
// counts as left, not as failed again.
func TestRedriveWithoutRoomForTheStamp(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	tg := f.Targets["solver"]
	f.StartWorker(t, "solver")
	attrs := map[string]sqstypes.MessageAttributeValue{"traceparent": {DataType: aws.String("String"), StringValue: aws.String("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}
	for i := range 6 {
		attrs[fmt.Sprintf("A%d", i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("x")}
	}
	if _, err := f.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(tg.QueueURL), MessageAttributes: attrs,
		MessageBody: aws.String(dlqtest.Event("ev-bad-a", map[string]any{"trace_id": "t-a", "job": "bad-a", "conversation_id": "c1"}))}); err != nil {
		t.Fatal(err)
	}
	f.WaitDepth(t, "solver", true, 1, 30*time.Second)
	moved, r, _ := redriveAll(t, f, "solver")
	if len(moved) != 1 || r.Moved != 1 || r.FailedAgain != 0 || r.Left != 1 {
		t.Fatalf("moved %d, result %+v", len(moved), r)
	}
	p, err := dlq.Peek(context.Background(), f.SQS, tg.DLQURL, 0)
	if err != nil || len(p.Letters) != 1 {
		t.Fatalf("peek: %+v, %v", p, err)
	}
	if _, ok := p.Letters[0].Attributes[dlq.AttrRedrive]; ok {
		t.Fatal("the worker kept the stamp: this test no longer exercises the body fallback")
	}
}
