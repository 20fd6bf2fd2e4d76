package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

func rejected(code string, sender bool) *types.BatchResultErrorEntry {
	return &types.BatchResultErrorEntry{Code: aws.String(code), SenderFault: sender}
}

// A rejected heartbeat loses the FIFO head: its Delete becomes Leave and
// the rest of its group is released at once, unprocessed.
func TestLostHeadLeavesAndReleasesGroup(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "A", 0), sqsMsg(2, "A", 0), sqsMsg(3, "A", 0)}}
	f.failEntry = func(op, rh string, vis int32) *types.BatchResultErrorEntry {
		if op == "visibility" && rh == "rh1" && vis == 2 {
			return rejected("ReceiptHandleIsInvalid", true)
		}
		return nil
	}
	var ran []string
	var mu sync.Mutex
	c, _ := New(f, Options{QueueURL: "q", FIFO: true, Concurrency: 10, VisibilityTimeout: 2 * time.Second, Heartbeat: 200 * time.Millisecond, Logger: quiet},
		func(_ context.Context, m *Message) Outcome {
			mu.Lock()
			ran = append(ran, m.ID)
			mu.Unlock()
			for deadline := time.Now().Add(3 * time.Second); !m.Lost() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			return Outcome{Action: Delete}
		})
	runUntil(t, c, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, r2 := f.vis["rh2"]
		_, r3 := f.vis["rh3"]
		return r2 && r3
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.deleted) != 0 {
		t.Errorf("deleted %v; a lost message must be left to SQS", f.deleted)
	}
	if f.vis["rh2"] != 0 || f.vis["rh3"] != 0 {
		t.Errorf("rest of group released with %v, want 0", f.vis)
	}
	if fmt.Sprint(ran) != "[m1]" {
		t.Errorf("ran %v, want only the lost head", ran)
	}
	if c.Stats.Lost.Load() != 1 {
		t.Errorf("Lost = %d", c.Stats.Lost.Load())
	}
}

// A transient per-entry heartbeat failure is retried, not taken as lost.
func TestTransientHeartbeatFailureRetried(t *testing.T) {
	f := &fakeSQS{}
	var calls atomic.Int32
	f.failEntry = func(op, rh string, vis int32) *types.BatchResultErrorEntry {
		if op == "visibility" && calls.Add(1) == 1 {
			return rejected("InternalError", false)
		}
		return nil
	}
	c, _ := New(f, Options{QueueURL: "q", VisibilityTimeout: 30 * time.Second, Logger: quiet}, nil)
	m := FromSQS(sqsMsg(1, "", 0), time.Now())
	ok := c.Extend(context.Background(), []*Message{m}, 30*time.Second, time.Now())
	if len(ok) != 1 || m.Lost() || calls.Load() != 2 || f.vis["rh1"] != 30 {
		t.Fatalf("extended %d, lost %v, attempts %d, vis %v", len(ok), m.Lost(), calls.Load(), f.vis)
	}
}

// Extensions stop at 12 h from the receive (less the margin).
func TestTwelveHourCeiling(t *testing.T) {
	f := &fakeSQS{}
	c, _ := New(f, Options{QueueURL: "q", VisibilityTimeout: 30 * time.Second, Logger: quiet}, nil)
	now := time.Now()
	near := FromSQS(sqsMsg(1, "", 0), now.Add(-(wire.SQSMaxVisibility - visibilityMargin - 5*time.Second)))
	far := FromSQS(sqsMsg(2, "", 0), now)
	ok := c.Extend(context.Background(), []*Message{near, far}, 30*time.Second, now)
	if len(ok) != 2 || f.vis["rh1"] != 5 || f.vis["rh2"] != 30 {
		t.Fatalf("first extension: ok %d vis %v, want rh1 capped at 5 s", len(ok), f.vis)
	}
	calls := f.visCalls
	ok = c.Extend(context.Background(), []*Message{near}, 30*time.Second, now.Add(time.Second))
	if len(ok) != 0 || f.visCalls != calls || c.Stats.Capped.Load() != 1 {
		t.Fatalf("extended past the ceiling: ok %d calls %d→%d capped %d", len(ok), calls, f.visCalls, c.Stats.Capped.Load())
	}
	if d := capDelay(near, time.Hour, now); d > 5*time.Second {
		t.Errorf("release delay not capped: %v", d)
	}
	if d := capDelay(far, time.Hour, now); d != time.Hour {
		t.Errorf("fresh message release capped: %v", d)
	}
}

// A heartbeat in flight when the step releases the message must not leave
// the extension as the last word: the release is re-applied.
func TestHeartbeatCrossingReleaseReappliesRelease(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "", 0)}}
	hbStarted := make(chan struct{})
	var once sync.Once
	f.visHook = func(in *sqs.ChangeMessageVisibilityBatchInput) {
		if in.Entries[0].VisibilityTimeout != 2 {
			return
		}
		once.Do(func() { close(hbStarted) })
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			f.mu.Lock()
			v, ok := f.vis["rh1"]
			f.mu.Unlock()
			if ok && v == 0 {
				return
			}
		}
	}
	c, _ := New(f, Options{QueueURL: "q", Concurrency: 1, VisibilityTimeout: 2 * time.Second, Heartbeat: 200 * time.Millisecond, Logger: quiet},
		func(context.Context, *Message) Outcome {
			<-hbStarted
			return Outcome{Action: Release}
		})
	runUntil(t, c, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := len(f.visLog)
		return n >= 3 && f.visLog[n-1] == "rh1=0"
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if fmt.Sprint(f.visLog) != "[rh1=0 rh1=2 rh1=0]" {
		t.Errorf("visibility calls %v, want release, crossing heartbeat, re-applied release", f.visLog)
	}

	// A message finished before the call is not extended at all.
	g := &fakeSQS{}
	c2, _ := New(g, Options{QueueURL: "q", VisibilityTimeout: 30 * time.Second, Logger: quiet}, nil)
	m := FromSQS(sqsMsg(9, "", 0), time.Now())
	c2.finishRelease(m, 0)
	if ok := c2.Extend(context.Background(), []*Message{m}, 30*time.Second, time.Now()); len(ok) != 0 || g.visCalls != 0 {
		t.Errorf("finished message extended (%d calls)", g.visCalls)
	}
}

// A failed DLQ send releases the head; the group does not go on as if it
// had been dead-lettered.
func TestFIFODeadLetterFailureHoldsGroup(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "A", 0), sqsMsg(2, "A", 0)}, sendErr: errors.New("DLQ down")}
	var ran atomic.Int32
	c, _ := New(f, Options{QueueURL: "q", DLQURL: "d", FIFO: true, Concurrency: 10, VisibilityTimeout: 30 * time.Second, Logger: quiet},
		func(context.Context, *Message) Outcome {
			ran.Add(1)
			return Outcome{Action: DeadLetter, Reason: &retry.Error{Code: "X"}}
		})
	runUntil(t, c, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.vis) == 2 })
	if ran.Load() != 1 {
		t.Errorf("processed %d messages; the group must stop at the failed dead-letter", ran.Load())
	}
	if v1, v2 := f.vis["rh1"], f.vis["rh2"]; v1 < 5 || v1 > 10 || v2 != v1 {
		t.Errorf("released rh1=%d rh2=%d, want the same 5-10 s", v1, v2)
	}
	if len(f.deleted) != 0 {
		t.Errorf("deleted %v", f.deleted)
	}
}

// Per-entry delete failures on HTTP 200: transient ones retried (bounded),
// receipt-invalid ones not.
func TestDeletePartialFailures(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "", 0), sqsMsg(2, "", 0), sqsMsg(3, "", 0)}}
	tries := map[string]int{}
	f.failEntry = func(op, rh string, _ int32) *types.BatchResultErrorEntry {
		if op != "delete" {
			return nil
		}
		tries[rh]++ // under f.mu
		switch {
		case rh == "rh1" && tries[rh] == 1:
			return rejected("InternalError", false)
		case rh == "rh2":
			return rejected("ReceiptHandleIsInvalid", true)
		case rh == "rh3":
			return rejected("ServiceUnavailable", false)
		}
		return nil
	}
	c, _ := New(f, Options{QueueURL: "q", Concurrency: 3, VisibilityTimeout: 30 * time.Second, Linger: 50 * time.Millisecond, Logger: quiet},
		func(context.Context, *Message) Outcome { return Outcome{Action: Delete} })
	runUntil(t, c, func() bool { return c.Stats.Deleted.Load()+c.Stats.DeleteFailed.Load() == 3 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if fmt.Sprint(f.deleted) != "[rh1]" || tries["rh1"] != 2 || tries["rh2"] != 1 || tries["rh3"] != maxBatchAttempts {
		t.Errorf("deleted %v tries %v", f.deleted, tries)
	}
	if c.Stats.Deleted.Load() != 1 || c.Stats.DeleteFailed.Load() != 2 {
		t.Errorf("Deleted %d DeleteFailed %d", c.Stats.Deleted.Load(), c.Stats.DeleteFailed.Load())
	}
}

func TestSanitizeAttribute(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"ok\ttab\nnl", 100, "ok\ttab\nnl"},
		{"a\x00b\x1bc", 100, "a\uFFFDb\uFFFDc"},
		{"x\uFFFEy", 100, "x\uFFFDy"},
		{"bad\xffutf8", 100, "bad\uFFFDutf8"},
		{"ééé", 5, "éé"},
		{"a😀", 4, "a"},
		{"😀", 4, "😀"},
	} {
		if got := SanitizeAttribute(tc.in, tc.max); got != tc.want {
			t.Errorf("SanitizeAttribute(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	f := &fakeSQS{}
	m := FromSQS(sqsMsg(1, "", 0), time.Now())
	long := strings.Repeat("é", maxErrorMessage) // 2 bytes each
	if err := SendToDLQ(context.Background(), f, "dlq", false, m, &retry.Error{Code: "C\x00", Message: "\x01" + long}, quiet); err != nil {
		t.Fatal(err)
	}
	a := f.sent[0].MessageAttributes
	msg := aws.ToString(a[AttrErrorMessage].StringValue)
	if aws.ToString(a[AttrErrorCode].StringValue) != "C\uFFFD" || len(msg) > maxErrorMessage || !strings.HasPrefix(msg, "\uFFFDé") || !strings.HasSuffix(msg, "é") || !utf8.ValidString(msg) {
		t.Errorf("code %q, message %d bytes, valid %v", aws.ToString(a[AttrErrorCode].StringValue), len(msg), utf8.ValidString(msg))
	}
}

// SIGTERM during a receive: the receive is not cancelled, and what it
// returns is made visible at once without being processed.
func TestShutdownLetsReceiveFinishAndReleases(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "", 0), sqsMsg(2, "", 0)}, receiveDelay: 300 * time.Millisecond}
	var ran atomic.Int32
	c, _ := New(f, Options{QueueURL: "q", Concurrency: 10, WaitTime: time.Second, VisibilityTimeout: 30 * time.Second, Logger: quiet},
		func(context.Context, *Message) Outcome { ran.Add(1); return Outcome{Action: Delete} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ran.Load() != 0 || f.vis["rh1"] != 0 || f.vis["rh2"] != 0 || len(f.vis) != 2 {
		t.Errorf("ran %d, visibility %v: want both released at once, none run", ran.Load(), f.vis)
	}
	if f.noDeadline != 0 {
		t.Errorf("%d receives without a deadline", f.noDeadline)
	}
}

// A slow OnHeartbeat does not delay the visibility heartbeats, and runs
// one at a time.
func TestSlowHeartbeatCallbackDoesNotBlockExtensions(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "", 0)}}
	release := make(chan struct{})
	var callbacks atomic.Int32
	c, _ := New(f, Options{QueueURL: "q", Concurrency: 1, VisibilityTimeout: 2 * time.Second, Heartbeat: 200 * time.Millisecond, Logger: quiet,
		// Misbehaving: ignores ctx until the test ends.
		OnHeartbeat: func(context.Context, []*Message) {
			callbacks.Add(1)
			<-release
		}},
		func(context.Context, *Message) Outcome { <-release; return Outcome{Action: Delete} })
	runUntil(t, c, func() bool {
		if c.Stats.Extended.Load() >= 4 {
			close(release)
			return true
		}
		return false
	})
	if n := callbacks.Load(); n != 1 {
		t.Errorf("callback ran %d times, want 1 (the next ones skipped while it blocks)", n)
	}
}
