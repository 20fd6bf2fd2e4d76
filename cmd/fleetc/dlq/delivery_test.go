package dlq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
	"github.com/fleetc/fleetc/runtime/queue"
)

// undelivered puts body on the fleet's delivery DLQ as EventBridge does when it gives up on a
// target: the event as the body, and the attributes the EventBridge User Guide lists for
// dead-letter queues (RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE,
// EXHAUSTED_RETRY_CONDITION, RETRY_ATTEMPTS).
func undelivered(t *testing.T, f *dlqtest.Fleet, body, target, code string) {
	t.Helper()
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	_, err := f.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.DeliveryURL), MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			dlq.AttrRuleARN:                 str("arn:aws:events:us-east-1:000000000000:rule/" + f.Name + "/solver"),
			dlq.AttrTargetARN:               str(target),
			queue.AttrErrorCode:             str(code),
			queue.AttrErrorMessage:          str("the target could not be reached"),
			dlq.AttrExhaustedRetryCondition: str("MaximumRetryAttempts"),
			queue.AttrRetryAttempts:         str("24"),
		}})
	if err != nil {
		t.Fatal(err)
	}
}

func arnOf(t *testing.T, f *dlqtest.Fleet, url string) string {
	t.Helper()
	out, err := f.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes[string(types.QueueAttributeNameQueueArn)]
}

// The bus's delivery DLQ holds events EventBridge never got onto a class queue, for several
// targets at once. fleetc dlq counts them by target and names the class whose queue each
// is; a redrive for solver moves exactly solver's, without EventBridge's diagnosis, and the
// real worker completes them; chat's and the tool's stay where they were.
func TestDeliveryDLQByTargetAndRedrive(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	ctx := context.Background()
	solver, chat := f.Targets["solver"], f.Targets["chat"]
	solverARN := arnOf(t, f, solver.QueueURL)
	lambdaARN := "arn:aws:lambda:us-east-1:000000000000:function:" + f.Name + "-tools"
	undelivered(t, f, dlqtest.Event("ev-d1", map[string]any{"trace_id": "t-d1", "job": "d1", "conversation_id": "c1"}), solverARN, "SDK_CLIENT_ERROR")
	undelivered(t, f, dlqtest.Event("ev-d2", map[string]any{"trace_id": "t-d2", "job": "d2", "conversation_id": "c1"}), solverARN, "SDK_CLIENT_ERROR")
	undelivered(t, f, dlqtest.Event("ev-d3", map[string]any{"trace_id": "t-d3", "job": "d3", "conversation_id": "c2"}), arnOf(t, f, chat.QueueURL), "NO_PERMISSIONS")
	undelivered(t, f, dlqtest.Event("ev-d4", map[string]any{"trace_id": "t-d4", "job": "d4", "conversation_id": "c3"}), lambdaARN, "NO_PERMISSIONS")

	r, err := dlq.InspectDelivery(ctx, f.SQS, f.IR.TargetDLQ.Name, f.DeliveryURL, []*dlq.Target{solver, chat}, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []dlq.TargetCount{{Target: solverARN, Class: "solver", Count: 2}, {Target: lambdaARN, Count: 1}, {Target: arnOf(t, f, chat.QueueURL), Class: "chat", Count: 1}}
	if r.Depth != 4 || !r.Complete || len(r.Targets) != 3 {
		t.Fatalf("delivery report: %+v", r)
	}
	// The two single-letter targets sort by ARN: arn:aws:lambda before arn:aws:sqs.
	for i, w := range want {
		if r.Targets[i] != w {
			t.Errorf("target %d: %+v, want %+v", i, r.Targets[i], w)
		}
	}
	if len(r.Codes) != 2 || r.Codes[0].Code != "NO_PERMISSIONS" || r.Codes[0].Count != 2 || r.Codes[1].Code != "SDK_CLIENT_ERROR" {
		t.Errorf("codes: %+v", r.Codes)
	}

	src := dlq.DeliveryOf(solver, f.IR.TargetDLQ.Name)
	if err := src.Resolve(ctx, f.SQS); err != nil {
		t.Fatal(err)
	}
	s := dlq.NewSession()
	moved, err := dlq.Move(ctx, f.SQS, src, dlq.MoveOptions{Rate: 100, Session: s})
	if err != nil || len(moved) != 2 {
		t.Fatalf("moved %d, %v", len(moved), err)
	}
	for _, m := range moved {
		if !strings.HasSuffix(m.Letter.TargetARN, ":"+solver.Queue) {
			t.Errorf("moved a letter for %s", m.Letter.TargetARN)
		}
	}
	// The copies on solver's queue start over: EventBridge's diagnosis stayed behind.
	copies, err := dlq.Peek(ctx, f.SQS, solver.QueueURL, 0)
	if err != nil || len(copies.Letters) != 2 {
		t.Fatalf("solver's queue: %+v, %v", copies, err)
	}
	for _, c := range copies.Letters {
		for _, k := range []string{dlq.AttrRuleARN, dlq.AttrTargetARN, dlq.AttrExhaustedRetryCondition, queue.AttrErrorCode, queue.AttrRetryAttempts} {
			if _, ok := c.Attributes[k]; ok {
				t.Errorf("copy %s still carries %s", c.ID, k)
			}
		}
	}
	f.StartWorker(t, "solver")
	v, err := dlq.Watch(ctx, f.SQS, records(f, solver), src, moved, 200*time.Millisecond, 30*time.Second)
	if err != nil || !v.OK() || v.Completed != 2 {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	res, err := s.Tally(ctx, f.SQS, src, 0)
	if err != nil || res.Moved != 2 || res.FailedAgain != 0 || res.Left != 0 {
		t.Fatalf("tally %+v, %v", res, err)
	}
	d, err := dlq.QueueDepth(ctx, f.SQS, f.DeliveryURL)
	if err != nil || d.Visible+d.InFlight != 2 {
		t.Fatalf("the delivery DLQ holds %+v (%v), want chat's and the tool's 2", d, err)
	}
}
