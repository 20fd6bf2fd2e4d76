package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/wire"
)

func records(f *dlqtest.Fleet, tg *dlq.Target) *idem.Dynamo {
	return &idem.Dynamo{API: f.DDB, Table: tg.Table, Class: tg.Class}
}

// A canary before the fix dies again and says so; after the fix a canary of 2 completes,
// then the rest of the code moves, and the other code stays.
func TestCanaryRedriveAfterFix(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	poison(t, f)
	tg := f.Targets["solver"]
	ctx := context.Background()
	f.StartWorker(t, "solver")

	moved, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Code: wire.BadOutput, Max: 1, Rate: 100})
	if err != nil || len(moved) != 1 {
		t.Fatalf("unfixed canary: %d moved, %v", len(moved), err)
	}
	v, err := dlq.Watch(ctx, f.SQS, records(f, tg), tg, moved, 200*time.Millisecond, 30*time.Second)
	if err != nil || v.OK() || v.Failed != 1 || v.Watched[0].Again == nil || v.Watched[0].Again.Code != wire.BadOutput {
		t.Fatalf("unfixed canary verdict %+v, %v", v, err)
	}

	f.Handler.Fix()
	moved, err = dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Code: wire.BadOutput, Max: 2, Rate: 100})
	if err != nil || len(moved) != 2 {
		t.Fatalf("canary: %d moved, %v", len(moved), err)
	}
	for _, m := range moved {
		if m.Letter.Code != wire.BadOutput {
			t.Errorf("moved a %s letter with --code BadOutput", m.Letter.Code)
		}
	}
	v, err = dlq.Watch(ctx, f.SQS, records(f, tg), tg, moved, 200*time.Millisecond, 30*time.Second)
	if err != nil || !v.OK() || v.Completed != 2 {
		t.Fatalf("canary verdict %+v, %v", v, err)
	}
	rest, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Code: wire.BadOutput, Rate: 100})
	if err != nil || len(rest) != 1 {
		t.Fatalf("rest: %d moved, %v", len(rest), err)
	}
	v, err = dlq.Watch(ctx, f.SQS, records(f, tg), tg, rest, 200*time.Millisecond, 30*time.Second)
	if err != nil || !v.OK() {
		t.Fatalf("rest verdict %+v, %v", v, err)
	}
	done, _ := f.Handler.Done()
	for i := range 3 {
		if n := done[fmt.Sprintf("ev-bad-%d", i)]; n != 1 {
			t.Errorf("bad-%d completed %d times", i, n)
		}
	}
	p, err := dlq.Peek(ctx, f.SQS, tg.DLQURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g := dlq.GroupByCode(p.Letters); len(g) != 1 || g[0].Code != wire.MalformedMessage || g[0].Count != 2 {
		t.Fatalf("left in the DLQ: %+v", g)
	}
}

// Killed between send and delete, a redrive leaves the letter in both places; the worker
// completes the copy, the DLQ copy comes back, a second redrive sends it again and the
// worker's idempotency record answers that duplicate: every job ran once, none was lost.
func TestInterruptedRedriveLosesNothing(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	poison(t, f)
	tg := f.Targets["solver"]
	ctx := context.Background()
	f.Handler.Fix()
	f.StartWorker(t, "solver")
	moved, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Code: wire.BadOutput, Rate: 100, Hold: 2 * time.Second,
		AfterSend: func(dlq.Letter) error { return errors.New("SIGKILL") }})
	if !errors.Is(err, dlq.ErrInterrupted) || len(moved) != 0 {
		t.Fatalf("interrupted move: %d moved, %v", len(moved), err)
	}
	// The copy completes while the letter is still held in the DLQ. (Count only the poisoned
	// events: ev-good may complete now too, if poison's worker stopped during its step.)
	deadline := time.Now().Add(30 * time.Second)
	for {
		done, _ := f.Handler.Done()
		bad := 0
		for k := range done {
			if strings.HasPrefix(k, "ev-bad-") {
				bad++
			}
		}
		if bad == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sent copy never completed: %v", done)
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.WaitDepth(t, "solver", true, 5, 10*time.Second) // nothing was deleted
	time.Sleep(2500 * time.Millisecond)               // the hold ends: the letter is visible again
	moved, err = dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Code: wire.BadOutput, Rate: 100})
	if err != nil || len(moved) != 3 {
		t.Fatalf("rerun: %d moved, %v", len(moved), err)
	}
	v, err := dlq.Watch(ctx, f.SQS, records(f, tg), tg, moved, 200*time.Millisecond, 30*time.Second)
	if err != nil || !v.OK() {
		t.Fatalf("rerun verdict %+v, %v", v, err)
	}
	f.WaitDepth(t, "solver", false, 0, 10*time.Second)
	done, _ := f.Handler.Done()
	for i := range 3 {
		if n := done[fmt.Sprintf("ev-bad-%d", i)]; n != 1 {
			t.Errorf("bad-%d completed %d times (want once: the duplicate is answered from the record)", i, n)
		}
	}
	f.WaitDepth(t, "solver", true, 2, 10*time.Second) // the two MalformedMessage letters
}

// A FIFO DLQ's letters go back to their groups in order, and the worker runs each group in
// that order.
func TestFIFORedriveKeepsGroupOrder(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	tg := f.Targets["chat"]
	ctx := context.Background()
	stop := f.StartWorker(t, "chat")
	for seq := 1; seq <= 3; seq++ {
		for _, g := range []string{"g1", "g2"} {
			job := fmt.Sprintf("bad-%s-%d", g, seq)
			f.Send(t, "chat", dlqtest.Event("ev-"+job, map[string]any{"trace_id": "t-" + job, "job": job, "conversation_id": g, "seq": seq}), g)
		}
	}
	f.WaitDepth(t, "chat", true, 6, 30*time.Second)
	stop()
	f.Handler.Fix()
	f.StartWorker(t, "chat")
	moved, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Rate: 100})
	if err != nil || len(moved) != 6 {
		t.Fatalf("%d moved, %v", len(moved), err)
	}
	v, err := dlq.Watch(ctx, f.SQS, records(f, tg), tg, moved, 200*time.Millisecond, 30*time.Second)
	if err != nil || !v.OK() {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	_, order := f.Handler.Done()
	last := map[string]int{}
	for _, job := range order {
		var g string
		var seq int
		if _, err := fmt.Sscanf(strings.TrimPrefix(job, "bad-"), "g%1s-%d", &g, &seq); err != nil {
			t.Fatalf("job %q: %v", job, err)
		}
		if seq != last[g]+1 {
			t.Errorf("group g%s ran %d after %d: order %v", g, seq, last[g], order)
		}
		last[g] = seq
	}
	if last["1"] != 3 || last["2"] != 3 {
		t.Errorf("completed %v", order)
	}
}

// A FIFO redrive interrupted between send and delete and run again sends the same letter
// with the same deduplication id: SQS drops the second copy, so the class queue holds it
// once. The copy carries the producer's traceparent, not the worker's diagnosis.
func TestFIFOResendIsDeduplicated(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	tg := f.Targets["chat"]
	ctx := context.Background()
	stop := f.StartWorker(t, "chat")
	f.DeadLetter(t, "chat", dlqtest.Event("ev-bad-x", map[string]any{"trace_id": "t-x", "job": "bad-x", "conversation_id": "g1"}), "g1")
	stop()
	_, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Rate: 100, Hold: time.Second,
		AfterSend: func(dlq.Letter) error { return errors.New("SIGKILL") }})
	if !errors.Is(err, dlq.ErrInterrupted) {
		t.Fatalf("interrupted move: %v", err)
	}
	f.WaitDepth(t, "chat", false, 1, 5*time.Second)
	time.Sleep(1500 * time.Millisecond) // the hold ends
	moved, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Rate: 100})
	if err != nil || len(moved) != 1 {
		t.Fatalf("rerun: %d moved, %v", len(moved), err)
	}
	f.WaitDepth(t, "chat", true, 0, 5*time.Second)
	f.WaitDepth(t, "chat", false, 1, 5*time.Second) // deduplicated, not lost
	out, err := f.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(tg.QueueURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("class queue: %+v, %v", out, err)
	}
	attrs := out.Messages[0].MessageAttributes
	if _, ok := attrs[queue.AttrErrorCode]; ok {
		t.Error("the redriven copy still carries ERROR_CODE")
	}
	if _, ok := attrs["traceparent"]; !ok {
		t.Errorf("the redriven copy lost the producer's traceparent: %v", attrs)
	}
}

// A class queue that refuses the copy (here: it no longer exists) stops the move with the
// letter still in the DLQ, and every letter visible again there.
func TestRefusedSendKeepsTheLetter(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	poison(t, f)
	tg := f.Targets["solver"]
	ctx := context.Background()
	if _, err := f.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(tg.QueueURL)}); err != nil {
		t.Fatal(err)
	}
	moved, err := dlq.Move(ctx, f.SQS, tg, dlq.MoveOptions{Code: wire.BadOutput, Rate: 100})
	if err == nil || len(moved) != 0 || !strings.Contains(err.Error(), "refused dead letter") || !strings.Contains(err.Error(), "it stays in the DLQ") {
		t.Fatalf("%d moved, err %v", len(moved), err)
	}
	p, err := dlq.Peek(ctx, f.SQS, tg.DLQURL, 0)
	if err != nil || len(p.Letters) != 5 || !p.Complete {
		t.Fatalf("after the refusal the DLQ shows %d letters (complete %t), %v", len(p.Letters), p.Complete, err)
	}
}
