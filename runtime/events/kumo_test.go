package events

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

// kumoBus creates a bus with a rule matching source "fleet.workers" that
// targets a fresh queue; it returns the bus name and queue URL.
func kumoBus(t testing.TB, cfg aws.Config) (bus, queueURL string) {
	t.Helper()
	ctx := context.Background()
	eb := awsconfig.EventBridge(cfg)
	bus = kumotest.Name(t, "bus")
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
		t.Fatalf("CreateEventBus: %v", err)
	}
	t.Cleanup(func() { _, _ = eb.DeleteEventBus(ctx, &eventbridge.DeleteEventBusInput{Name: aws.String(bus)}) })
	qname, url := kumotest.Queue(t, cfg, "completions", false, nil)
	rule := kumotest.Name(t, "rule")
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{
		Name: aws.String(rule), EventBusName: aws.String(bus),
		EventPattern: aws.String(`{"source":["fleet.workers"],"detail-type":["agent.step.completed"]}`),
	}); err != nil {
		t.Fatalf("PutRule: %v", err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{
		Rule: aws.String(rule), EventBusName: aws.String(bus),
		Targets: []types.Target{{Id: aws.String("q"), Arn: aws.String(kumotest.QueueARN(qname))}},
	}); err != nil {
		t.Fatalf("PutTargets: %v", err)
	}
	t.Cleanup(func() {
		_, _ = eb.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(bus), Ids: []string{"q"}})
		_, _ = eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String(rule), EventBusName: aws.String(bus)})
	})
	return bus, url
}

// TestKumoEventsReachQueue publishes 23 completion events through the
// batcher (3 requests on a classic bus) and asserts each arrives on the
// rule's target queue as an EventBridge envelope with its trace_id, and
// that a non-matching event does not.
func TestKumoEventsReachQueue(t *testing.T) {
	counter := awsconfig.NewRequestCounter()
	cfg := kumotest.RequireWith(t, awsconfig.Options{Counter: counter})
	bus, url := kumoBus(t, cfg)
	b, err := New(awsconfig.EventBridge(cfg), Config{Bus: bus, Linger: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 23
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Publish(ctx, Entry{
				Source: "fleet.workers", DetailType: "agent.step.completed",
				Detail:  json.RawMessage(fmt.Sprintf(`{"agent_class":"researcher","step":%d}`, i)),
				TraceID: fmt.Sprintf("conv-1-step-%02d", i),
			})
		}()
	}
	wg.Wait()
	if err := b.Publish(ctx, Entry{Source: "fleet.other", DetailType: "agent.step.completed", Detail: json.RawMessage(`{}`), TraceID: "unmatched"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	// 23 = 10 + 10 + 3 (the 3 flushed by linger), then the unmatched
	// event alone.
	if got := counter.CountOperation("eventbridge", "PutEvents"); got != 4 {
		t.Fatalf("PutEvents requests = %d, want 4", got)
	}

	sq := awsconfig.SQS(cfg)
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var env struct {
				Source     string `json:"source"`
				DetailType string `json:"detail-type"`
				Detail     struct {
					TraceID    string `json:"trace_id"`
					AgentClass string `json:"agent_class"`
				} `json:"detail"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil {
				t.Fatalf("body %q: %v", aws.ToString(m.Body), err)
			}
			if env.Source != "fleet.workers" || env.DetailType != "agent.step.completed" || env.Detail.AgentClass != "researcher" {
				t.Fatalf("unexpected envelope %s", aws.ToString(m.Body))
			}
			got = append(got, env.Detail.TraceID)
			_, _ = sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
	// Nothing else arrives: the fleet.other event matched no rule.
	extra, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(extra.Messages) != 0 {
		t.Fatalf("unexpected extra message %s", aws.ToString(extra.Messages[0].Body))
	}
	slices.Sort(got)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("conv-1-step-%02d", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trace ids on the queue:\n got %v\nwant %v", got, want)
	}
}
