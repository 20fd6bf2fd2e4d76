package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

// completionSink routes agent.step.completed on bus to a fresh queue.
func completionSink(t *testing.T, bus string) string {
	t.Helper()
	awsCfg := kumotest.Require(t)
	eb := awsconfig.EventBridge(awsCfg)
	ctx := context.Background()
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = eb.DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: aws.String(bus)})
	})
	sinkName, sinkURL := kumotest.Queue(t, awsCfg, "sink", false, nil)
	rule := kumotest.Name(t, "rule")
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String(bus),
		EventPattern: aws.String(`{"source":["fleet.workers"],"detail-type":["agent.step.completed"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(bus),
		Targets: []ebtypes.Target{{Id: aws.String("sink"), Arn: aws.String(kumotest.QueueARN(sinkName))}}}); err != nil {
		t.Fatal(err)
	}
	return sinkURL
}

type completion struct {
	Detail struct {
		TraceID    string          `json:"trace_id"`
		AgentClass string          `json:"agent_class"`
		Result     json.RawMessage `json:"result"`
		ResultRef  *struct {
			Type, Bucket, Key string
		} `json:"result_ref"`
	} `json:"detail"`
}

func drainSink(t *testing.T, e *env, url string) []completion {
	var out []completion
	for _, body := range drainSinkBodies(t, e, url) {
		var c completion
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("event %s: %v", body, err)
		}
		out = append(out, c)
	}
	return out
}

// drainSinkBodies reads (and deletes) every event on the sink queue.
func drainSinkBodies(t *testing.T, e *env, url string) []string {
	var out []string
	for {
		r, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			out = append(out, aws.ToString(m.Body))
			_, _ = e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// Completion events: one agent.step.completed per unit of work, even when
// the work is delivered twice; a large output travels as result_ref
// (claim check in S3) and a payload_ref input is resolved before the
// handler sees it.
func TestCompletionEventsAndClaimCheck(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	awsCfg := kumotest.Require(t)
	bus := kumotest.Name(t, "bus")
	bucket := kumotest.Bucket(t, awsCfg, "cc")
	e := newEnv(t, envOpts{heartbeat: 1, bus: bus, bucket: bucket, threshold: 2048})
	sink := completionSink(t, bus)
	s3c := awsconfig.S3(awsCfg)
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("inputs/q1.json"),
		Body: strings.NewReader(`{"question":"a very long question"}`)}); err != nil {
		t.Fatal(err)
	}
	ks := keys("ev", 4)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k}), "")
	}
	e.send(envelope("evt-"+ks[0], stepSpec{TraceID: ks[0]}), "") // duplicate delivery
	e.send(envelope("evt-big", stepSpec{TraceID: "big", PadBytes: 5000}), "")
	e.send(envelope("evt-ref", stepSpec{TraceID: "ref", PayloadRef: map[string]string{"type": "s3", "bucket": bucket, "key": "inputs/q1.json"}}), "")
	e.startWorker(5 * time.Second)
	all := append(append([]string{}, ks...), "big", "ref")
	e.account(all, nil, 30*time.Second)

	var events []completion
	deadline := time.Now().Add(10 * time.Second)
	for len(events) < len(all) && time.Now().Before(deadline) {
		events = append(events, drainSink(t, e, sink)...)
	}
	events = append(events, drainSink(t, e, sink)...) // any late duplicate
	per := map[string]int{}
	for _, ev := range events {
		per[ev.Detail.TraceID]++
		if ev.Detail.AgentClass != "researcher" {
			t.Errorf("agent_class %q", ev.Detail.AgentClass)
		}
		switch ev.Detail.TraceID {
		case "big":
			if ev.Detail.ResultRef == nil || ev.Detail.Result != nil {
				t.Errorf("big output inline: %+v", ev.Detail)
				continue
			}
			obj, err := s3c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(ev.Detail.ResultRef.Bucket), Key: aws.String(ev.Detail.ResultRef.Key)})
			if err != nil {
				t.Errorf("result_ref object: %v", err)
			} else {
				obj.Body.Close()
			}
		case "ref":
			if !strings.Contains(string(ev.Detail.Result), `"had_payload":true`) {
				t.Errorf("payload_ref not resolved: %s", ev.Detail.Result)
			}
		}
	}
	for _, k := range all {
		if per[k] != 1 {
			t.Errorf("%s: %d completion events, want 1", k, per[k])
		}
	}
	t.Logf("completion events: %d for %d units of work (%d deliveries)", len(events), len(all), len(all)+1)
}
