package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fairConsumer runs a consumer over f whose key is the body's text before "/", whose steps
// block until release is closed, and returns the IDs that started.
func fairConsumer(t *testing.T, f *fakeSQS, maxPerKey int) (*Consumer, func() []string, chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	var mu sync.Mutex
	var started []string
	c, err := New(f, Options{QueueURL: "q", DLQURL: "d", MaxMessages: 10, Concurrency: 4, VisibilityTimeout: 30 * time.Second, DrainTimeout: 100 * time.Millisecond,
		KeyOf: func(m *Message) string { k, _, _ := strings.Cut(m.Body, "/"); return k }, MaxPerKey: maxPerKey, DeferDelay: 4 * time.Second, Logger: quiet},
		func(ctx context.Context, m *Message) Outcome {
			mu.Lock()
			started = append(started, m.ID)
			mu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
			}
			return Outcome{Action: Delete}
		})
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), started...) }, release
}

func tenantMsg(i int, key string, attrs int) types.Message {
	m := sqsMsg(i, "", attrs)
	m.Body = aws.String(key + "/" + aws.ToString(m.Body))
	return m
}

// A message over its key's cap is re-sent, never released: the copy goes to the class queue
// with the key as MessageGroupId, the receives that ran (not the deferring one), its first
// send time and a delay spreading the key's copies one step per cap slot apart; the original
// is deleted. Another key runs meanwhile.
func TestFairDefersOverCapByResend(t *testing.T) {
	f := &fakeSQS{batch: []types.Message{tenantMsg(1, "a", 0), tenantMsg(2, "a", 0), tenantMsg(3, "a", 0), tenantMsg(4, "b", 0)}}
	c, started, release := fairConsumer(t, f, 1)
	defer close(release)
	var deleted []string
	inFlight := 0
	runUntil(t, c, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		deleted, inFlight = append([]string(nil), f.deleted...), c.InFlight("a")
		return len(f.deleted) == 2 && len(started()) == 2
	})
	if s := started(); len(s) != 2 || !(s[0] == "m1" || s[1] == "m1") || !(s[0] == "m4" || s[1] == "m4") {
		t.Errorf("started %v, want m1 (a's one slot) and m4 (b)", s)
	}
	if len(f.vis) != 0 {
		t.Errorf("visibility changed %v: a deferral must never release (each release is one more receive)", f.vis)
	}
	var delays []int32
	for _, in := range f.sent {
		a := func(k string) string { return aws.ToString(in.MessageAttributes[k].StringValue) }
		if aws.ToString(in.QueueUrl) != "q" || aws.ToString(in.MessageGroupId) != "a" || !strings.HasPrefix(aws.ToString(in.MessageBody), "a/") {
			t.Errorf("copy sent to %s, group %q, body %q; want the class queue, group a, the original body", aws.ToString(in.QueueUrl), aws.ToString(in.MessageGroupId), aws.ToString(in.MessageBody))
		}
		// sqsMsg's ApproximateReceiveCount is 2: one receive ran before, this one did not.
		if a(AttrPriorReceives) != "1" || a(AttrDeferrals) != "1" || a("traceparent") == "" || (a(AttrFirstSent) != "1002" && a(AttrFirstSent) != "1003") {
			t.Errorf("copy attributes %v", in.MessageAttributes)
		}
		delays = append(delays, in.DelaySeconds)
	}
	if len(delays) != 2 || delays[0]+delays[1] != 12 || delays[0] == delays[1] {
		t.Errorf("delays %v, want 4 and 8 s (one step per cap slot after the previous copy)", delays)
	}
	if d := strings.Join(deleted, ","); d != "rh2,rh3" && d != "rh3,rh2" {
		t.Errorf("deleted %s, want the deferred originals rh2 and rh3", d)
	}
	if c.Stats.Deferred.Load() != 2 || c.Stats.OverCap.Load() != 0 || inFlight != 1 {
		t.Errorf("deferred %d, over cap %d, a in flight %d", c.Stats.Deferred.Load(), c.Stats.OverCap.Load(), inFlight)
	}
}

// When the copy cannot be sent (SQS refuses it, or the message's own attributes leave no
// room for the carried counts) the message runs over the cap: never lost, never held back.
func TestFairRunsOverCapWhenTheCopyCannotBeSent(t *testing.T) {
	for name, f := range map[string]*fakeSQS{
		"send fails":   {batch: []types.Message{tenantMsg(1, "a", 0), tenantMsg(2, "a", 0)}, sendErr: errors.New("throttled")},
		"no attribute": {batch: []types.Message{tenantMsg(1, "a", 8), tenantMsg(2, "a", 8)}},
	} {
		t.Run(name, func(t *testing.T) {
			c, started, release := fairConsumer(t, f, 1)
			defer close(release)
			runUntil(t, c, func() bool { return len(started()) == 2 })
			if c.Stats.OverCap.Load() != 1 || c.Stats.Deferred.Load() != 0 || len(f.sent) != 0 {
				t.Errorf("over cap %d, deferred %d, sent %d; want the second run over the cap", c.Stats.OverCap.Load(), c.Stats.Deferred.Load(), len(f.sent))
			}
		})
	}
}

// A deferred copy's receive count adds the receives it carries, and its age counts from the
// original's send.
func TestFairCopyCarriesCounts(t *testing.T) {
	sm := sqsMsg(1, "", 0)
	sm.Attributes["ApproximateReceiveCount"] = "1"
	sm.MessageAttributes[AttrPriorReceives] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("2")}
	sm.MessageAttributes[AttrDeferrals] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("5")}
	sm.MessageAttributes[AttrFirstSent] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("42")}
	m := FromSQS(sm, time.Now())
	if m.ReceiveCount != 3 || m.deferrals != 5 || m.SentAt().UnixMilli() != 42 {
		t.Errorf("receive count %d, deferrals %d, sent %v; want 3, 5, 42 ms", m.ReceiveCount, m.deferrals, m.SentAt().UnixMilli())
	}
	if sm.Attributes["SentTimestamp"] != "1001" {
		t.Error("the SDK message's attributes were changed in place")
	}
}

// A sender can forge the carried counts: the largest one must not wrap the receive count
// negative, which would never reach the retry limit.
func TestFairForgedCountDoesNotWrap(t *testing.T) {
	sm := sqsMsg(1, "", 0)
	sm.Attributes["ApproximateReceiveCount"] = "2"
	for _, k := range []string{AttrPriorReceives, AttrDeferrals} {
		sm.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("9223372036854775807")}
	}
	m := FromSQS(sm, time.Now())
	if m.ReceiveCount < 2 || m.deferrals < 0 || m.deferrals+1 < 0 {
		t.Errorf("receive count %d, deferrals %d: a forged count wrapped", m.ReceiveCount, m.deferrals)
	}
}

func TestValidGroupID(t *testing.T) {
	for key, want := range map[string]bool{"tenant-1": true, "a": true, "": false, "has space": false, "é": false, strings.Repeat("x", 128): true, strings.Repeat("x", 129): false} {
		if got := validGroupID(key); got != want {
			t.Errorf("validGroupID(%q) = %t, want %t", key, got, want)
		}
	}
}

// A dead letter does not carry a deferred copy's counts: moved back from the DLQ, it starts
// with its whole receive budget.
func TestFairDeadLetterDropsCarriedCounts(t *testing.T) {
	sm := sqsMsg(1, "", 0)
	for _, k := range []string{AttrPriorReceives, AttrDeferrals, AttrFirstSent} {
		sm.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("1")}
	}
	f := &fakeSQS{}
	if err := SendToDLQ(context.Background(), f, "dlq", false, FromSQS(sm, time.Now()), nil, quiet); err != nil {
		t.Fatal(err)
	}
	attrs := f.sent[0].MessageAttributes
	for _, k := range []string{AttrPriorReceives, AttrDeferrals, AttrFirstSent} {
		if _, ok := attrs[k]; ok {
			t.Errorf("dead letter carries %s", k)
		}
	}
	if aws.ToString(attrs[AttrRetryAttempts].StringValue) != "3" || attrs["traceparent"].StringValue == nil {
		t.Errorf("dead letter attributes %v; want RETRY_ATTEMPTS 3 (2 receives + 1 carried) and traceparent", attrs)
	}
}
