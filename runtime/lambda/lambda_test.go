package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/lambda/sqsevent"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/worker"
)

// testConfig is a lambda class's runtime config; its 2 s step window bounds how long an
// always-failing handler is retried inside one invocation before the message is released.
func testConfig(t *testing.T, q, dlq, table string, fifo bool) *config.Config {
	t.Helper()
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"t","class":"researcher","region":"us-east-1","runtime":"lambda",
 "queue":{"name":%q,"dlq_name":%q,"fifo":%t,"group_by":%q,"visibility_timeout_seconds":30,"heartbeat_seconds":0,"wait_time_seconds":0,"max_messages":10,"max_receives":4},
 "concurrency":4,"step":{"p95_seconds":1,"max_seconds":2},"retry":{"max_attempts":4,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":%q,"window_seconds":3600,"key":["trace_id"]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "events":{"bus":"","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"t-researcher","metrics_addr":""}}`, q, dlq, fifo, groupBy(fifo), table)
	c, err := config.Parse("lambda.json", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func groupBy(fifo bool) string {
	if fifo {
		return "conversation_id"
	}
	return ""
}

// fakeRuntimeAPI serves one invocation, then blocks /next until the test
// ends, and captures the response.
type fakeRuntimeAPI struct {
	event    []byte
	deadline time.Time
	served   bool
	mu       sync.Mutex
	resp     chan []byte
}

func (f *fakeRuntimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next":
		f.mu.Lock()
		first := !f.served
		f.served = true
		f.mu.Unlock()
		if !first {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(f.deadline.UnixMilli(), 10))
		w.Write(f.event)
	case r.Method == http.MethodPost && r.URL.Path == "/2018-06-01/runtime/invocation/req-1/response":
		b, _ := io.ReadAll(r.Body)
		f.resp <- b
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, 400)
	}
}

func TestLambdaPartialBatchAgainstKumo(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newChaosRig
	awsCfg := kumotest.Require(t)
	dlqName, dlqURL := kumotest.Queue(t, awsCfg, "ldlq", false, nil)
	qName, qURL := kumotest.Queue(t, awsCfg, "lsrc", false, map[string]string{"VisibilityTimeout": "30"})
	table := kumotest.Table(t, awsCfg, "lidem")
	cfg := testConfig(t, qName, dlqName, table, false)
	sqsc := sqs.NewFromConfig(awsCfg)
	ctx := context.Background()

	var mu sync.Mutex
	effects := map[string]int{}
	h := handler.Func(func(_ context.Context, req handler.Request) (json.RawMessage, error) {
		switch {
		case strings.HasPrefix(req.Key, "poison"):
			return nil, retry.Permanent("BadInput", errors.New("unparseable question"))
		case strings.HasPrefix(req.Key, "flaky"):
			return nil, retry.FromStatus(503, "", "")
		}
		mu.Lock()
		effects[req.Key]++
		mu.Unlock()
		return json.RawMessage(`{"ok":true}`), nil
	})
	w := &worker.Worker{Cfg: cfg, Handler: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour}}

	for _, k := range []string{"ok-1", "ok-2", "poison-1", "flaky-1", "ok-1"} { // ok-1 twice: a duplicate
		body := fmt.Sprintf(`{"version":"0","id":"evt-%s","detail-type":"agent.step.requested","source":"fleet.coordinator","detail":{"trace_id":%q}}`, k, k)
		if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(qURL), MessageBody: aws.String(body),
			MessageAttributes: map[string]types.MessageAttributeValue{"traceparent": {DataType: aws.String("String"), StringValue: aws.String("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Receive as the event source mapping would.
	out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qURL), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 5 {
		t.Fatalf("receive: %d %v", len(out.Messages), err)
	}
	var flakyID string
	okCopies := map[string]bool{}
	for _, m := range out.Messages {
		if strings.Contains(aws.ToString(m.Body), "flaky-1") {
			flakyID = aws.ToString(m.MessageId)
		}
		if strings.Contains(aws.ToString(m.Body), `"ok-1"`) {
			okCopies[aws.ToString(m.MessageId)] = true
		}
	}
	event, _ := json.Marshal(sqsevent.FromSQS(out.Messages, kumotest.QueueARN(qName), kumotest.Region))
	api := &fakeRuntimeAPI{event: event, deadline: time.Now().Add(30 * time.Second), resp: make(chan []byte, 1)}
	srv := httptest.NewServer(api)
	defer srv.Close()

	loop := &Loop{API: strings.TrimPrefix(srv.URL, "http://"), Handler: &Handler{Worker: w, SQS: sqsc, QueueURL: qURL, DLQURL: dlqURL}}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- loop.Run(lctx) }()
	var resp sqsevent.Response
	select {
	case b := <-api.resp:
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatalf("response %s: %v", b, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no response posted")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("loop ended with %v", err)
	}

	// The flaky message fails; a copy of ok-1 processed while the other
	// copy held the lease is released for later (busy), never run twice.
	sawFlaky, busyCopies := false, 0
	for _, f := range resp.BatchItemFailures {
		switch {
		case f.ItemIdentifier == flakyID:
			sawFlaky = true
		case okCopies[f.ItemIdentifier]:
			busyCopies++
		default:
			t.Errorf("unexpected failure %s", f.ItemIdentifier)
		}
	}
	if !sawFlaky || busyCopies > 1 {
		t.Errorf("batchItemFailures = %+v, want the flaky message %s (and at most one busy ok-1 copy)", resp.BatchItemFailures, flakyID)
	}
	if effects["ok-1"] != 1 || effects["ok-2"] != 1 {
		t.Errorf("side effects %v, want ok-1 and ok-2 once", effects)
	}
	// The poison message is in the DLQ with its diagnosis.
	d, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil || len(d.Messages) != 1 {
		t.Fatalf("DLQ: %d %v", len(d.Messages), err)
	}
	if code := aws.ToString(d.Messages[0].MessageAttributes["ERROR_CODE"].StringValue); code != "BadInput" || d.Messages[0].MessageAttributes["traceparent"].StringValue == nil {
		t.Errorf("DLQ attributes %v", d.Messages[0].MessageAttributes)
	}
	// The flaky message was released with a jittered delay (≤ 1 s cap,
	// rounded up), not left for the 30 s visibility timeout.
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, m := range r.Messages {
			id := aws.ToString(m.MessageId)
			if id == flakyID {
				got = true
			} else if !okCopies[id] {
				t.Fatalf("after release: unexpected message %s", id)
			}
		}
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("flaky message not released with its jittered delay")
		}
	}
}

func TestHandleFIFOStopsGroupAfterFailure(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "fidem")
	cfg := testConfig(t, "q.fifo", "d.fifo", table, true)
	var mu sync.Mutex
	var seen []string
	h := handler.Func(func(_ context.Context, req handler.Request) (json.RawMessage, error) {
		mu.Lock()
		seen = append(seen, req.Key)
		mu.Unlock()
		if req.Key == "a2" {
			return nil, retry.FromStatus(503, "", "")
		}
		return json.RawMessage(`1`), nil
	})
	w := &worker.Worker{Cfg: cfg, Handler: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour}}
	rec := func(id, key, group string) sqsevent.Record {
		return sqsevent.Record{MessageID: id, ReceiptHandle: "rh-" + id, Body: fmt.Sprintf(`{"trace_id":%q,"conversation_id":%q}`, key, group),
			Attributes: map[string]string{"ApproximateReceiveCount": "1", "MessageGroupId": group}}
	}
	ev := sqsevent.Event{Records: []sqsevent.Record{rec("1", "a1", "A"), rec("2", "a2", "A"), rec("3", "a3", "A"), rec("4", "b1", "B")}}
	h2 := &Handler{Worker: w, SQS: nopSQS{}, FIFO: true}
	resp := h2.Handle(context.Background(), ev, time.Now().Add(time.Minute))
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	if strings.Join(ids, ",") != "2,3" {
		t.Errorf("failures %v, want the failed message and the rest of its group: 2,3", ids)
	}
	for _, k := range seen {
		if k == "a3" {
			t.Error("a3 ran after its group's predecessor failed")
		}
	}
}

type nopSQS struct{}

func (nopSQS) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return &sqs.ReceiveMessageOutput{}, nil
}
func (nopSQS) DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return &sqs.DeleteMessageBatchOutput{}, nil
}
func (nopSQS) ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}
func (nopSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return &sqs.SendMessageOutput{}, nil
}
