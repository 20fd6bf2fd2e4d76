package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/worker"
)

// BenchmarkStepOverhead measures the runtime's own cost per step against
// kumo with a no-op in-process handler at saturation (the queue pre-filled
// with b.N messages, concurrency 10): wall time per step, steps/s, and AWS
// requests per completed step by service. Target: ≤ 0.25 SQS requests per
// step (receive 10 + DeleteMessageBatch 10 = 0.2).
//
//	go test ./runtime/worker -run '^$' -bench StepOverhead -benchtime 2000x
func BenchmarkStepOverhead(b *testing.B) {
	for _, conc := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) { benchSteps(b, conc, false) })
	}
}

// BenchmarkEmittingStep is BenchmarkStepOverhead for a class that emits one completion
// event per step (an open contract, checked before PutEvents), reporting DynamoDB writes
// per step (target 2: the claim and the completion, recorded already published) and
// PutEvents requests per step.
//
//	go test ./runtime/worker -run '^$' -bench EmittingStep -benchtime 1000x
func BenchmarkEmittingStep(b *testing.B) { benchSteps(b, 10, true) }

func benchSteps(b *testing.B, concurrency int, emit bool) {
	awsCfg := kumotest.Require(b)
	bus, emits := "", ""
	if emit {
		bus = kumotest.Name(b, "bbus")
		eb := awsconfig.EventBridge(awsCfg)
		if _, err := eb.CreateEventBus(context.Background(), &eventbridge.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_, _ = eb.DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: aws.String(bus)})
		})
		emits = `{"source":"fleet.workers","detail_type":"agent.step.completed","version":1,
 "detail":{"carry":[],"worker_fields":["agent_class","result","trace_id"],"schema":{"type":"object","required":["trace_id","agent_class"]}}}`
	}
	sqsc := awsconfig.SQS(awsCfg)
	dlqName, dlqURL := kumotest.Queue(b, awsCfg, "bdlq", false, nil)
	qName, qURL := kumotest.Queue(b, awsCfg, "bsrc", false, map[string]string{"VisibilityTimeout": "30"})
	table := kumotest.Table(b, awsCfg, "bidem")
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"bench","class":"noop","region":"us-east-1","runtime":"eks",
 "queue":{"name":%q,"dlq_name":%q,"fifo":false,"group_by":"","visibility_timeout_seconds":30,"heartbeat_seconds":10,"wait_time_seconds":1,"max_messages":10,"max_receives":4},
 "concurrency":%d,"step":{"p95_seconds":1,"max_seconds":10},"retry":{"max_attempts":4,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":%q,"window_seconds":3600,"key":[]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "events":{"bus":%q,"bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[%s]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"bench-noop","metrics_addr":""}}`, qName, dlqName, concurrency, table, bus, emits)
	cfg, err := parseCfg(raw)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QueueURL, cfg.DLQURL = qURL, dlqURL

	// Pre-fill: b.N EventBridge envelopes, 10 per SendMessageBatch.
	ctx := context.Background()
	for i := 0; i < b.N; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, b.N); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)),
				MessageBody: aws.String(envelope(fmt.Sprintf("evt-%d-%d", time.Now().UnixNano(), j), stepSpec{TraceID: fmt.Sprint("t", j)}))})
		}
		if _, err := sqsc.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(qURL), Entries: entries}); err != nil {
			b.Fatal(err)
		}
	}
	counter := awsconfig.NewRequestCounter()
	rt, err := worker.Build(ctx, cfg, worker.BuildOptions{
		Getenv: func(k string) string {
			if k == worker.EnvDisableDynamoCRC32 {
				return "true"
			}
			return ""
		},
		Logger: slog.New(slog.NewTextHandler(benchLog(), &slog.HandlerOptions{Level: slog.LevelWarn})).With("n", b.N),
		AWSOptions: awsconfig.Options{Endpoint: kumotest.Endpoint, Region: kumotest.Region, Counter: counter,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
	})
	if err != nil {
		b.Fatal(err)
	}
	var steps atomic.Int64
	rt.Worker.Handler = handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
		steps.Add(1)
		return json.RawMessage(`{}`), nil
	})
	counter.Reset()
	b.ResetTimer()
	start := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = rt.RunPoll(runCtx, 5*time.Second) }()
	// Done when every step ran and every message is deleted.
	for {
		if steps.Load() >= int64(b.N) {
			out, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(qURL),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			if err == nil && out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	sqsReq, ddbReq := counter.Count("sqs"), counter.Count("dynamodb")
	recv := counter.CountOperation("sqs", "ReceiveMessage")
	del := counter.CountOperation("sqs", "DeleteMessageBatch")
	ddbWrites := counter.CountOperation("dynamodb", "PutItem") + counter.CountOperation("dynamodb", "UpdateItem") + counter.CountOperation("dynamodb", "DeleteItem")
	putEvents := counter.CountOperation("eventbridge", "PutEvents")
	cancel()
	<-done
	n := float64(b.N)
	b.ReportMetric(float64(ddbWrites)/n, "ddb-writes/step")
	if emit {
		b.ReportMetric(float64(putEvents)/n, "putevents/step")
	}
	b.ReportMetric(float64(sqsReq)/n, "sqs-req/step")
	b.ReportMetric(float64(recv)/n, "receive/step")
	b.ReportMetric(float64(del)/n, "delete/step")
	b.ReportMetric(float64(ddbReq)/n, "ddb-req/step")
	b.ReportMetric(n/elapsed.Seconds(), "steps/s")
}

// benchLog shows the worker's warnings with FLEET_BENCH_LOG=1.
func benchLog() io.Writer {
	if os.Getenv("FLEET_BENCH_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}
