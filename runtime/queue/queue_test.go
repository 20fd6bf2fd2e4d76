package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/retry"
)

// fakeSQS records calls; it serves one batch of messages then nothing
// (an empty long poll of WaitTimeSeconds, at least 10 ms).
type fakeSQS struct {
	mu       sync.Mutex
	batch    []types.Message
	served   bool
	sent     []*sqs.SendMessageInput
	deleted  []string
	vis      map[string]int32
	visLog   []string // "receipt=seconds" in call order
	sendErr  error
	receives int
	// failEntry, when set, is consulted per batch entry (op "delete" or
	// "visibility"); a non-nil result is returned in Failed.
	failEntry func(op, receipt string, vis int32) *types.BatchResultErrorEntry
	// receiveDelay delays the first receive (to land inside a shutdown).
	receiveDelay time.Duration
	// visCalls counts ChangeMessageVisibilityBatch calls; visHook runs
	// at the start of each (outside the lock).
	visCalls int
	visHook  func(in *sqs.ChangeMessageVisibilityBatchInput)
	// noDeadline counts receives whose context had no deadline.
	noDeadline int
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	f.receives++
	if _, ok := ctx.Deadline(); !ok {
		f.noDeadline++
	}
	if d := f.receiveDelay; d > 0 && !f.served {
		f.receiveDelay = 0
		f.mu.Unlock()
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		f.mu.Lock()
	}
	if !f.served {
		f.served = true
		n := min(int(in.MaxNumberOfMessages), len(f.batch))
		out := f.batch[:n]
		f.batch = f.batch[n:]
		f.served = len(f.batch) == 0
		f.mu.Unlock()
		return &sqs.ReceiveMessageOutput{Messages: out}, nil
	}
	f.mu.Unlock()
	select {
	case <-time.After(max(time.Duration(in.WaitTimeSeconds)*time.Second, 10*time.Millisecond)):
		return &sqs.ReceiveMessageOutput{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		if f.failEntry != nil {
			if fe := f.failEntry("delete", aws.ToString(e.ReceiptHandle), 0); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		f.deleted = append(f.deleted, aws.ToString(e.ReceiptHandle))
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	f.visCalls++
	hook := f.visHook
	f.mu.Unlock()
	if hook != nil {
		hook(in)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.vis == nil {
		f.vis = map[string]int32{}
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		rh := aws.ToString(e.ReceiptHandle)
		if f.failEntry != nil {
			if fe := f.failEntry("visibility", rh, e.VisibilityTimeout); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		f.vis[rh] = e.VisibilityTimeout
		f.visLog = append(f.visLog, fmt.Sprintf("%s=%d", rh, e.VisibilityTimeout))
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sendErr != nil {
		return nil, f.sendErr
	}
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{}, nil
}

func sqsMsg(i int, group string, attrs int) types.Message {
	ma := map[string]types.MessageAttributeValue{}
	for a := 0; a < attrs; a++ {
		ma[fmt.Sprintf("attr%02d", a)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	ma["traceparent"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("00-a-b-01")}
	return types.Message{MessageId: aws.String(fmt.Sprint("m", i)), ReceiptHandle: aws.String(fmt.Sprint("rh", i)), Body: aws.String(fmt.Sprint(i)),
		Attributes: map[string]string{"ApproximateReceiveCount": "2", "MessageGroupId": group, "SentTimestamp": strconv.Itoa(1000 + i)}, MessageAttributes: ma}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestDeadLetterDiagnosisAndAttributeLimit(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "g", 12)}}
	c, err := New(f, Options{QueueURL: "q", DLQURL: "dlq.fifo", FIFO: true, MaxMessages: 10, Concurrency: 2, VisibilityTimeout: 30 * time.Second, Logger: quiet},
		func(context.Context, *Message) Outcome {
			return Outcome{Action: DeadLetter, Reason: &retry.Error{Code: "BadInput", Message: "no question"}}
		})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.deleted) == 1 })
	if len(f.sent) != 1 {
		t.Fatalf("sent %d to DLQ", len(f.sent))
	}
	in := f.sent[0]
	a := func(k string) string { return aws.ToString(in.MessageAttributes[k].StringValue) }
	if a(AttrErrorCode) != "BadInput" || a(AttrErrorMessage) != "no question" || a(AttrRetryAttempts) != "2" {
		t.Errorf("diagnosis: %v", in.MessageAttributes)
	}
	if len(in.MessageAttributes) != 10 || a("traceparent") == "" {
		t.Errorf("want 10 attributes with traceparent kept, got %d", len(in.MessageAttributes))
	}
	if aws.ToString(in.MessageGroupId) != "g" || aws.ToString(in.MessageDeduplicationId) != "m1" || aws.ToString(in.MessageBody) != "1" {
		t.Errorf("fifo DLQ send: %+v", in)
	}
}

func TestDeadLetterNotAcceptedIsNotDeleted(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{sqsMsg(1, "", 0)}, sendErr: errors.New("DLQ down")}
	c, _ := New(f, Options{QueueURL: "q", DLQURL: "dlq", MaxMessages: 10, Concurrency: 1, VisibilityTimeout: 30 * time.Second, Logger: quiet},
		func(context.Context, *Message) Outcome {
			return Outcome{Action: DeadLetter, Reason: &retry.Error{Code: "X"}}
		})
	runUntil(t, c, func() bool { f.mu.Lock(); defer f.mu.Unlock(); _, ok := f.vis["rh1"]; return ok })
	if len(f.deleted) != 0 {
		t.Error("deleted from the source although the DLQ refused it")
	}
	if v := f.vis["rh1"]; v < 5 || v > 10 {
		t.Errorf("released for %d s, want 5-10", v)
	}
}

func TestFIFOGroupOrderAndReleaseRest(t *testing.T) {
	// Group A arrives shuffled (kumo re-queues in map order); B interleaved.
	f := &fakeSQS{batch: []types.Message{sqsMsg(3, "A", 0), sqsMsg(1, "A", 0), sqsMsg(10, "B", 0), sqsMsg(2, "A", 0), sqsMsg(4, "A", 0)}}
	var mu sync.Mutex
	var ran []string
	c, _ := New(f, Options{QueueURL: "q", DLQURL: "d", FIFO: true, MaxMessages: 10, Concurrency: 10, VisibilityTimeout: 30 * time.Second, Logger: quiet},
		func(_ context.Context, m *Message) Outcome {
			mu.Lock()
			ran = append(ran, m.ID)
			mu.Unlock()
			if m.ID == "m2" {
				return Outcome{Action: Release, Delay: 1500 * time.Millisecond}
			}
			return Outcome{Action: Delete}
		})
	runUntil(t, c, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.deleted) == 2 && len(f.vis) == 3 })
	mu.Lock()
	defer mu.Unlock()
	var a []string
	for _, id := range ran {
		if id != "m10" {
			a = append(a, id)
		}
	}
	if fmt.Sprint(a) != "[m1 m2]" {
		t.Errorf("group A ran %v, want [m1 m2] (in order, stopping at the release)", a)
	}
	for _, rh := range []string{"rh2", "rh3", "rh4"} {
		if f.vis[rh] != 2 {
			t.Errorf("%s visibility %d, want 2 (1.5 s rounded up, same for the rest of the group)", rh, f.vis[rh])
		}
	}
}

func TestClampVisibility(t *testing.T) {
	for d, want := range map[time.Duration]int32{-time.Second: 0, 0: 0, 300 * time.Millisecond: 1, 2 * time.Second: 2, 13 * time.Hour: 43200} {
		if got := clampVisibility(d); got != want {
			t.Errorf("%v → %d, want %d", d, got, want)
		}
	}
}

func TestNewRejectsHeartbeatAboveVisibility(t *testing.T) {
	if _, err := New(&fakeSQS{}, Options{QueueURL: "q", VisibilityTimeout: 2 * time.Second, Heartbeat: 2 * time.Second}, nil); err == nil {
		t.Error("accepted")
	}
}

func runUntil(t *testing.T, c *Consumer, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("condition not reached")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}
