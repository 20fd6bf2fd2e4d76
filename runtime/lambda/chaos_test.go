package lambda

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
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
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// Chaos on the Lambda mode, on kumo: the function's Handle gets the SQS events an event
// source mapping would send (esm below: receive a batch, invoke with the function's
// deadline, delete what batchItemFailures does not list), the worker holds each message
// through its faults inside the invocation, and the ledger balances: every step completed
// once, nothing dead-lettered but the poison, which goes on its first attempt with its reason.

// fnTimeout is the function's timeout: each invocation's deadline (less SafetyMargin)
// bounds the step window. The queue's visibility covers it, as Lambda requires.
const fnTimeout = 12 * time.Second

// chaosRig is a lambda class on kumo whose handler injects faults by the detail's "fault":
// throttle (429 with retry-after-ms 1000) or outage (503) for fault_ms from the key's first
// call, sleep (sleep_ms, committing only if the invocation is still alive), spend (429
// without retry-after), badout (a result outside the output contract).
type chaosRig struct {
	t         *testing.T
	sqs       *sqs.Client
	qURL, dlq string
	qARN      string
	newStore  func() idem.Store
	mu        sync.Mutex
	calls     map[string]int
	effects   map[string]int
	firstCall map[string]time.Time
}

type faultSpec struct {
	TraceID string `json:"trace_id"`
	Fault   string `json:"fault"`
	FaultMS int    `json:"fault_ms"`
	SleepMS int    `json:"sleep_ms"`
}

// newChaosRig makes the test's own queues and idempotency table on kumo (kumotest names):
// nothing is shared, so the tests that wait on kumo for seconds run in parallel (t.Parallel).
func newChaosRig(t *testing.T, maxAttempts int) *chaosRig {
	awsCfg := kumotest.Require(t)
	dlqName, dlqURL := kumotest.Queue(t, awsCfg, "cdlq", false, nil)
	qName, qURL := kumotest.Queue(t, awsCfg, "csrc", false, map[string]string{"VisibilityTimeout": fmt.Sprint(int(fnTimeout/time.Second) + 2),
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, kumotest.QueueARN(dlqName), maxAttempts+1)})
	table := kumotest.Table(t, awsCfg, "cidem")
	r := &chaosRig{t: t, sqs: sqs.NewFromConfig(awsCfg), qURL: qURL, dlq: dlqURL, qARN: kumotest.QueueARN(qName),
		calls: map[string]int{}, effects: map[string]int{}, firstCall: map[string]time.Time{}}
	api := kumotest.DynamoDB(awsCfg)
	r.newStore = func() idem.Store { return &idem.Dynamo{API: api, Table: table, Class: "researcher", Window: time.Hour} }
	return r
}

// worker is the function's worker: a 6 s lease renewed every second (Run's RenewItself),
// step.max 10 s, max_attempts as given, an output contract {"ok": …}.
func (r *chaosRig) worker(store idem.Store, maxAttempts int) *worker.Worker {
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"t","class":"researcher","region":"us-east-1","runtime":"lambda",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":6,"heartbeat_seconds":1,"wait_time_seconds":0,"max_messages":10,"max_receives":%[1]d},
 "concurrency":10,"step":{"p95_seconds":1,"max_seconds":10},"retry":{"max_attempts":%[1]d,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":"chaos-idem","window_seconds":3600,"key":["trace_id"]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "events":{"bus":"","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "output":{"max_bytes":4096,"schema":{"type":"object","required":["ok"]}},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"t-researcher","metrics_addr":""}}`, maxAttempts)
	cfg, err := config.Parse("chaos.json", []byte(raw))
	if err != nil {
		r.t.Fatalf("%+v", err)
	}
	w := &worker.Worker{Cfg: cfg, Handler: handler.Func(r.handle), Idem: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w.RenewItself()
	return w
}

func (r *chaosRig) handle(ctx context.Context, req handler.Request) (json.RawMessage, error) {
	var f faultSpec
	_ = json.Unmarshal(req.Input, &f)
	r.mu.Lock()
	r.calls[req.Key]++
	if _, ok := r.firstCall[req.Key]; !ok {
		r.firstCall[req.Key] = time.Now()
	}
	faulty := time.Since(r.firstCall[req.Key]) < time.Duration(f.FaultMS)*time.Millisecond
	r.mu.Unlock()
	switch {
	case f.Fault == "throttle" && faulty:
		return nil, retry.FromResponse(429, http.Header{"Retry-After-Ms": {"1000"}}, "rate limited")
	case f.Fault == "outage" && faulty:
		return nil, retry.FromStatus(503, "", "upstream down")
	case f.Fault == "spend":
		return nil, retry.FromStatus(429, "", `{"error":{"code":"insufficient_quota"}}`)
	case f.Fault == "badout":
		return json.RawMessage(`{"nope":1}`), nil
	}
	select {
	case <-time.After(time.Duration(f.SleepMS) * time.Millisecond):
	case <-ctx.Done():
		return nil, retry.Classify(ctx.Err()) // the side effect did not happen
	}
	r.mu.Lock()
	r.effects[req.Key]++
	r.mu.Unlock()
	return json.RawMessage(`{"ok":true}`), nil
}

func (r *chaosRig) send(body string) {
	r.t.Helper()
	if _, err := r.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(r.qURL), MessageBody: aws.String(body)}); err != nil {
		r.t.Fatal(err)
	}
}

func stepBody(f faultSpec) string {
	b, _ := json.Marshal(map[string]any{"version": "0", "id": "evt-" + f.TraceID, "detail-type": "agent.step.requested", "source": "fleet.coordinator", "detail": f})
	return string(b)
}

// receive takes up to 10 messages as the mapping does (visibility: 0 = the queue's).
func (r *chaosRig) receive(ctx context.Context, visibility int32) []types.Message {
	out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.qURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		VisibilityTimeout: visibility, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames: []string{"All"}})
	if err != nil {
		if ctx.Err() == nil {
			r.t.Error(err)
		}
		return nil
	}
	return out.Messages
}

// esm runs the event source mapping until ctx ends: each batch is one invocation with the
// function's deadline; the messages batchItemFailures does not list are deleted.
func (r *chaosRig) esm(ctx context.Context, h *Handler) {
	for ctx.Err() == nil {
		msgs := r.receive(ctx, 0)
		if len(msgs) == 0 {
			continue
		}
		resp := h.Handle(ctx, sqsevent.FromSQS(msgs, r.qARN, kumotest.Region), time.Now().Add(fnTimeout))
		for _, m := range msgs {
			if !slices.ContainsFunc(resp.BatchItemFailures, func(f sqsevent.ItemFailure) bool { return f.ItemIdentifier == aws.ToString(m.MessageId) }) {
				_, _ = r.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(r.qURL), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}
}

// run starts the mapping on a fresh function and waits until every key in done has its side
// effect, the DLQ holds len(dead) letters and the queue is empty, then checks the ledger:
// each key in done completed once, each in dead dead-lettered once as given, nothing else.
func (r *chaosRig) run(done []string, dead map[string]string, maxAttempts int, timeout time.Duration) {
	r.t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.esm(ctx, r.handler(r.worker(r.newStore(), maxAttempts))) }()
	defer func() { stop(); wg.Wait() }()
	letters := map[string][]string{}
	for end := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		out, err := r.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.dlq), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
		if err != nil {
			r.t.Fatal(err)
		}
		for _, m := range out.Messages {
			key := "<malformed>"
			if env, err := wire.ParseEnvelope([]byte(aws.ToString(m.Body))); err == nil {
				key = env.TraceID
			}
			letters[key] = append(letters[key], aws.ToString(m.MessageAttributes["ERROR_CODE"].StringValue)+" (attempt "+aws.ToString(m.MessageAttributes["RETRY_ATTEMPTS"].StringValue)+")")
			_, _ = r.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(r.dlq), ReceiptHandle: m.ReceiptHandle})
		}
		r.mu.Lock()
		finished := 0
		for _, k := range done {
			if r.effects[k] > 0 {
				finished++
			}
		}
		r.mu.Unlock()
		attrs, err := r.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(r.qURL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil {
			r.t.Fatal(err)
		}
		empty := attrs.Attributes["ApproximateNumberOfMessages"] == "0" && attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
		if finished == len(done) && len(letters) >= len(dead) && empty {
			break
		}
		if time.Now().After(end) {
			r.t.Errorf("timeout: %d of %d completed, dead letters %v, queue empty %v", finished, len(done), letters, empty)
			break
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	completed, duplicated := 0, 0
	for _, k := range done {
		if r.effects[k] == 1 {
			completed++
		}
		duplicated += max(r.effects[k]-1, 0)
	}
	for k, want := range dead {
		if got := letters[k]; len(got) != 1 || got[0] != want {
			r.t.Errorf("key %s: dead letters %v, want [%s]", k, got, want)
		}
		if r.effects[k] != 0 {
			r.t.Errorf("key %s: dead-lettered but committed", k)
		}
	}
	for k, got := range letters {
		if _, ok := dead[k]; !ok {
			r.t.Errorf("key %s: unexpectedly dead-lettered: %v", k, got)
		}
	}
	r.t.Logf("ledger: submitted=%d completed_once=%d dead_lettered=%d duplicate_side_effects=%d handler_calls=%v",
		len(done)+len(dead), completed, len(letters), duplicated, r.calls)
	if completed != len(done) || duplicated != 0 {
		r.t.Errorf("ledger does not balance: %d of %d completed once, %d duplicated side effects", completed, len(done), duplicated)
	}
}

func (r *chaosRig) handler(w *worker.Worker) *Handler {
	return &Handler{Worker: w, SQS: r.sqs, QueueURL: r.qURL, DLQURL: r.dlq}
}

// A 6 s 429 wave (retry-after-ms 1000) with max_attempts 2 (the old model dead-lettered it
// after two ~2 s receives), plus poison: a spend limit, a result outside the output contract
// and a body that is no envelope, each dead-lettered on its first attempt with its reason.
// (Each fault has its own test: an invocation lasts as long as its slowest record, so a
// batch mixing faults would hide a release behind the other fault's hold.)
func TestChaosLambdaThrottleWave(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newChaosRig
	r := newChaosRig(t, 2)
	done := sendFaulty(r, "throttle", 6000)
	r.send(stepBody(faultSpec{TraceID: "spend-1", Fault: "spend"}))
	r.send(stepBody(faultSpec{TraceID: "badout-1", Fault: "badout"}))
	r.send("this is not json")
	start := time.Now()
	r.run(done, map[string]string{"spend-1": string(wire.SpendLimit) + " (attempt 1)", "badout-1": string(wire.HandlerOutputInvalid) + " (attempt 1)",
		"<malformed>": string(wire.MalformedMessage) + " (attempt 1)"}, 2, 40*time.Second)
	t.Logf("lambda: 6 s 429 wave ×3 and 3 poison settled in %v", time.Since(start).Round(time.Millisecond))
	for _, k := range []string{"spend-1", "badout-1"} {
		if r.calls[k] != 1 {
			t.Errorf("%s: %d handler calls, want 1 (not retried)", k, r.calls[k])
		}
	}
}

// A 4 s retryable outage (503) with max_attempts 2: backed off with full jitter inside the
// invocation until it clears; completed once, nothing dead-lettered.
func TestChaosLambdaRetryableOutage(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newChaosRig
	r := newChaosRig(t, 2)
	start := time.Now()
	r.run(sendFaulty(r, "outage", 4000), nil, 2, 40*time.Second)
	t.Logf("lambda: 4 s outage ×3 settled in %v", time.Since(start).Round(time.Millisecond))
}

// sendFaulty sends three steps with fault for ms and returns their keys.
func sendFaulty(r *chaosRig, fault string, ms int) []string {
	var keys []string
	for i := range 3 {
		k := fmt.Sprintf("%s-%d", fault, i)
		keys = append(keys, k)
		r.send(stepBody(faultSpec{TraceID: k, Fault: fault, FaultMS: ms}))
	}
	return keys
}

// A function instance killed mid-step after renewing its lease (so the lease outlives the
// message's visibility): the next invocation, on the class's last usable receive, finds
// the dead lease (Busy), holds the message until it lapses and takes the step over inside
// that invocation. One side effect, nothing dead-lettered.
func TestChaosLambdaKilledInvocationTakenOver(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newChaosRig
	r := newChaosRig(t, 2)
	const k = "killed-1"
	r.send(stepBody(faultSpec{TraceID: k, SleepMS: 1500}))
	msgs := r.receive(context.Background(), 2) // the doomed invocation's batch: back in 2 s
	if len(msgs) != 1 {
		t.Fatalf("doomed receive: %d messages", len(msgs))
	}
	store := &beatStore{Store: r.newStore(), beats: make(chan struct{}, 1)}
	doomed := &Handler{Worker: r.worker(store, 2), SQS: nopSQS{}} // a killed instance calls SQS no more
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // its response dies with it: no batchItemFailures, no release, no delete
		defer close(done)
		doomed.Handle(ctx, sqsevent.FromSQS(msgs, r.qARN, kumotest.Region), time.Now().Add(fnTimeout))
	}()
	select {
	case <-store.beats:
	case <-time.After(10 * time.Second):
		t.Fatal("the doomed invocation never renewed its lease")
	}
	kill()
	<-done
	r.run([]string{k}, nil, 2, 30*time.Second)
	if r.calls[k] != 2 {
		t.Errorf("handler calls %d, want 2 (the killed one, the takeover)", r.calls[k])
	}
}

// beatStore is a killed instance's idempotency store: it gives nothing back, and reports
// each lease renewal.
type beatStore struct {
	idem.Store
	beats chan struct{}
}

func (b *beatStore) Abandon(context.Context, string, string) error { return nil }

func (b *beatStore) Extend(ctx context.Context, key, owner string, lease time.Duration) error {
	err := b.Store.Extend(ctx, key, owner, lease)
	if err == nil {
		select {
		case b.beats <- struct{}{}:
		default:
		}
	}
	return err
}
