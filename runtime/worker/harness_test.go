package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// sideEffects is the test's tool: an HTTP sidecar that records each
// committed side effect per idempotency key. A step commits only if its
// request is still alive after its sleep (a killed worker's call does not).
type sideEffects struct {
	mu    sync.Mutex
	calls map[string]int       // attempts seen
	first map[string]time.Time // each key's first attempt, when its fault window opens
	done  map[string]int       // committed side effects
	order []stepSpec           // commits in order
	srv   *httptest.Server
}

type stepSpec struct {
	TraceID        string `json:"trace_id"`
	ConversationID string `json:"conversation_id,omitempty"`
	Behavior       string `json:"behavior,omitempty"` // ok | poison | flaky | spend | always503 | throttle | outage
	SleepMS        int    `json:"sleep_ms,omitempty"`
	FailTimes      int    `json:"fail_times,omitempty"`
	Seq            int    `json:"seq,omitempty"`
	PadBytes       int    `json:"pad_bytes,omitempty"`
	PayloadRef     any    `json:"payload_ref,omitempty"`
	// FaultMS is how long, from the key's first attempt, throttle answers 429 with
	// retry-after-ms RetryAfterMS and outage answers 503 without one.
	FaultMS      int `json:"fault_ms,omitempty"`
	RetryAfterMS int `json:"retry_after_ms,omitempty"`
}

func newSideEffects(t *testing.T) *sideEffects {
	s := &sideEffects{calls: map[string]int{}, first: map[string]time.Time{}, done: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sideEffects) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var spec stepSpec
	_ = json.Unmarshal(raw, &spec)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.calls[key]++
	n := s.calls[key]
	if n == 1 {
		s.first[key] = time.Now()
	}
	faulty := time.Since(s.first[key]) < time.Duration(spec.FaultMS)*time.Millisecond
	s.mu.Unlock()
	switch spec.Behavior {
	case "poison":
		http.Error(w, `{"error":{"code":"BadInput","message":"cannot parse the question"}}`, 400)
		return
	case "spend":
		w.WriteHeader(429) // no Retry-After: spend limit
		return
	case "always503":
		w.WriteHeader(503)
		return
	case "throttle":
		if faulty {
			w.Header().Set("retry-after-ms", strconv.Itoa(spec.RetryAfterMS))
			http.Error(w, `{"error":{"type":"rate_limit_error","message":"slow down"}}`, http.StatusTooManyRequests)
			return
		}
	case "outage":
		if faulty {
			w.WriteHeader(503)
			return
		}
	case "flaky":
		if n <= spec.FailTimes {
			w.WriteHeader(503)
			return
		}
	}
	if spec.SleepMS > 0 {
		select {
		case <-r.Context().Done():
			return // the caller died: nothing committed
		case <-time.After(time.Duration(spec.SleepMS) * time.Millisecond):
		}
	}
	if r.Context().Err() != nil {
		return
	}
	s.mu.Lock()
	s.done[key]++
	s.order = append(s.order, spec)
	s.mu.Unlock()
	var detail map[string]json.RawMessage
	_ = json.Unmarshal(raw, &detail)
	_, hadPayload := detail["payload"]
	fmt.Fprintf(w, `{"ok":true,"key":%q,"seq":%d,"had_payload":%t,"pad":%q}`, key, spec.Seq, hadPayload, strings.Repeat("x", spec.PadBytes))
}

func (s *sideEffects) commits() []stepSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stepSpec(nil), s.order...)
}

func (s *sideEffects) snapshot() (calls, done map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls, done = map[string]int{}, map[string]int{}
	for k, v := range s.calls {
		calls[k] = v
	}
	for k, v := range s.done {
		done[k] = v
	}
	return calls, done
}

// env is one kumo-backed class: queue + DLQ, idempotency table, sidecar.
type env struct {
	t        *testing.T
	cfg      *config.Config
	cfgPath  string
	sqs      *sqs.Client
	ddb      *dynamodb.Client
	counter  *awsconfig.RequestCounter
	fx       *sideEffects
	queueURL string
	dlqURL   string
	extraEnv map[string]string // more of the worker's environment
}

type envOpts struct {
	fifo        bool
	visibility  int
	heartbeat   int
	maxReceives int
	maxAttempts int
	concurrency int
	bus         string // non-empty: emit agent.step.completed to this bus
	bucket      string // claim-check bucket
	threshold   int    // claim-check threshold_bytes
	stepMax     int    // step.max_seconds, the window one receive holds a step through faults (0: see newEnv)
	// detail is the emitted event's runtime-config detail section; nil: an open contract
	// ({"type": "object"}) with agent_class, result and trace_id written by the worker.
	detail map[string]any
}

func (o envOpts) emitDetail() map[string]any {
	if o.detail != nil {
		return o.detail
	}
	return map[string]any{"carry": []string{}, "worker_fields": []string{"agent_class", "result", "trace_id"}, "schema": map[string]any{"type": "object"}}
}

// newEnv makes the test's own queue, dead-letter queue and idempotency table on kumo
// (kumotest names, unique per test). Every resource of a kumo test is its own, and a worker
// gets its variables through env.getenv or a binary's Env, not the process environment: so
// the tests that wait on kumo for seconds run in parallel (t.Parallel), and the package
// takes about its longest test, not their sum. A test that sets a process variable
// (t.Setenv refuses a parallel test) stays sequential.
func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	awsCfg := kumotest.Require(t)
	if o.visibility == 0 {
		o.visibility = 2
	}
	if o.maxReceives == 0 {
		o.maxReceives = 4
	}
	if o.maxAttempts == 0 {
		o.maxAttempts = 4
	}
	if o.concurrency == 0 {
		o.concurrency = 10
	}
	if o.threshold == 0 {
		o.threshold = 204800
	}
	e := &env{t: t, sqs: awsconfig.SQS(awsCfg), ddb: kumotest.DynamoDB(awsCfg), counter: awsconfig.NewRequestCounter(), fx: newSideEffects(t)}
	attrs := map[string]string{}
	if o.fifo {
		attrs["ContentBasedDeduplication"] = "true"
	}
	dlqName, dlqURL := kumotest.Queue(t, awsCfg, "dlq", o.fifo, attrs)
	qattrs := map[string]string{
		"VisibilityTimeout": strconv.Itoa(o.visibility),
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, kumotest.QueueARN(dlqName), o.maxReceives),
	}
	for k, v := range attrs {
		qattrs[k] = v
	}
	qName, qURL := kumotest.Queue(t, awsCfg, "src", o.fifo, qattrs)
	e.queueURL, e.dlqURL = qURL, dlqURL
	table := kumotest.Table(t, awsCfg, "idem")
	groupBy := ""
	if o.fifo {
		groupBy = "conversation_id"
	}
	raw := map[string]any{
		"format_version": 1, "fleet": "test", "class": "researcher", "region": kumotest.Region, "runtime": "eks",
		"queue": map[string]any{"name": qName, "dlq_name": dlqName, "fifo": o.fifo, "group_by": groupBy,
			"visibility_timeout_seconds": o.visibility, "heartbeat_seconds": o.heartbeat, "wait_time_seconds": 1,
			"max_messages": 10, "max_receives": o.maxReceives},
		"concurrency": o.concurrency,
		"step":        map[string]any{"p95_seconds": 5, "max_seconds": 30},
		"retry":       map[string]any{"max_attempts": o.maxAttempts, "base_ms": 100, "cap_ms": 1000},
		"idempotency": map[string]any{"table": table, "window_seconds": 3600, "key": []string{"trace_id"}},
		"claim_check": map[string]any{"bucket": o.bucket, "threshold_bytes": o.threshold, "read_prefixes": []string{"inputs/", "outputs/"}},
		"events":      map[string]any{"bus": o.bus, "bus_model": "classic", "max_entries": 10, "fill_order": []string{"worker", "output", "carried"}, "emits": []any{}},
		"handler":     map[string]any{"type": "http", "url": e.fx.srv.URL + "/step"},
		"models":      map[string]any{"policy": "", "policies": map[string]any{}},
		"telemetry":   map[string]any{"service_name": "test-researcher", "metrics_addr": ""},
	}
	if o.bus != "" {
		raw["events"].(map[string]any)["emits"] = []any{map[string]any{"detail_type": "agent.step.completed", "source": "fleet.workers", "version": 1, "detail": o.emitDetail()}}
	}
	if o.heartbeat == 0 && o.visibility < 30 {
		raw["step"] = map[string]any{"p95_seconds": 1, "max_seconds": o.visibility}
	}
	if o.stepMax > 0 {
		raw["step"] = map[string]any{"p95_seconds": 1, "max_seconds": o.stepMax}
	}
	b, _ := json.MarshalIndent(raw, "", "  ")
	e.cfgPath = filepath.Join(t.TempDir(), "researcher.json")
	if err := os.WriteFile(e.cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(e.cfgPath, b)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QueueURL, cfg.DLQURL = qURL, dlqURL
	e.cfg = cfg
	return e
}

// getenv is the environment a worker (in-process or binary) gets.
func (e *env) getenv(k string) string {
	if v, ok := e.extraEnv[k]; ok {
		return v
	}
	return map[string]string{
		worker.EnvDisableDynamoCRC32: "true",
		awsconfig.EnvEndpoint:        kumotest.Endpoint,
		"AWS_REGION":                 kumotest.Region,
		"AWS_ACCESS_KEY_ID":          "test",
		"AWS_SECRET_ACCESS_KEY":      "test",
		config.EnvQueueURL:           e.queueURL,
		config.EnvDLQURL:             e.dlqURL,
	}[k]
}

// environ is the worker binary's environment: the test's, less the Go runtime's GC settings
// (the deployed worker runs with the defaults, and TestBinaryPeakRSS measures its memory
// budget under them; .ci/run sets GOGC=200 for terraform), plus the harness's AWS and queues.
func (e *env) environ() []string {
	out := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=")
	})
	for _, k := range []string{worker.EnvDisableDynamoCRC32, awsconfig.EnvEndpoint, "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", config.EnvQueueURL, config.EnvDLQURL} {
		out = append(out, k+"="+e.getenv(k))
	}
	return out
}

// startWorker runs an in-process poller; stop() is SIGTERM-like (drain).
func (e *env) startWorker(drain time.Duration) (rt *worker.Runtime, stop func()) {
	e.t.Helper()
	return e.startWorkerWith(drain, nil)
}

func (e *env) startWorkerWith(drain time.Duration, tel *telemetry.Telemetry) (rt *worker.Runtime, stop func()) {
	e.t.Helper()
	cfg := *e.cfg
	rt, err := worker.Build(context.Background(), &cfg, worker.BuildOptions{
		Getenv:    e.getenv,
		Telemetry: tel,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		AWSOptions: awsconfig.Options{Endpoint: kumotest.Endpoint, Region: kumotest.Region, Counter: e.counter,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := rt.RunPoll(ctx, drain); err != nil {
			e.t.Errorf("RunPoll: %v", err)
		}
		_ = rt.Close(context.Background())
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return rt, stop
}

func envelope(id string, spec stepSpec) string {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": id, "detail-type": "agent.step.requested", "source": "fleet.coordinator",
		"time": "2026-01-01T00:00:00Z", "region": kumotest.Region, "resources": []string{}, "detail": spec,
	})
	return string(b)
}

// send enqueues body (with a traceparent attribute, as producers set it).
func (e *env) send(body string, group string) {
	e.t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(e.queueURL), MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"traceparent": {DataType: aws.String("String"), StringValue: aws.String("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")},
		}}
	if group != "" {
		in.MessageGroupId = aws.String(group)
	}
	if _, err := e.sqs.SendMessage(context.Background(), in); err != nil {
		e.t.Fatal(err)
	}
}

// dlqMessage is one dead letter with its diagnosis.
type dlqMessage struct {
	Key, Code, Message, Attempts, TraceParent string
}

// drainDLQ reads (and deletes) everything in the DLQ.
func (e *env) drainDLQ() []dlqMessage {
	var out []dlqMessage
	for {
		r, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.dlqURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}, VisibilityTimeout: 30})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			env, err := wire.ParseEnvelope([]byte(aws.ToString(m.Body)))
			key := "<malformed>"
			if err == nil {
				key = env.TraceID
			}
			a := func(n string) string { return aws.ToString(m.MessageAttributes[n].StringValue) }
			out = append(out, dlqMessage{Key: key, Code: a("ERROR_CODE"), Message: a("ERROR_MESSAGE"), Attempts: a("RETRY_ATTEMPTS"), TraceParent: a("traceparent")})
			_, _ = e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.dlqURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func (e *env) queueDepth(url string) (visible, inflight int) {
	out, err := e.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		e.t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inflight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return
}

// record reads the idempotency record status for key.
func (e *env) record(key string) string {
	out, err := e.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.cfg.Idempotency.Table),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: key}, "sk": &ddbtypes.AttributeValueMemberS{Value: e.cfg.Class}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		e.t.Fatal(err)
	}
	if s, ok := out.Item["status"].(*ddbtypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// ledger is the end-of-run accounting every fault test asserts.
type ledger struct {
	Submitted, Completed, DeadLettered, Lost, DuplicateEffects int
	Attempts                                                   int
}

// account waits until every submitted key is either committed or in the DLQ
// and the source queue is empty, then checks: completed exactly once (side
// effect count 1, record done) or dead-lettered with a reason (wantDLQ gives
// the expected ERROR_CODE; side effect count 0); nothing lost.
func (e *env) account(keys []string, wantDLQ map[string]string, timeout time.Duration) ledger {
	e.t.Helper()
	var dead []dlqMessage
	deadline := time.Now().Add(timeout)
	for {
		dead = append(dead, e.drainDLQ()...)
		_, done := e.fx.snapshot()
		finished := 0
		for _, k := range keys {
			if _, dl := wantDLQ[k]; !dl && done[k] > 0 {
				finished++
			}
		}
		v, inf := e.queueDepth(e.queueURL)
		if finished == len(keys)-len(wantDLQ) && len(dead) >= len(wantDLQ) && v == 0 && inf == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.t.Logf("timeout: finished=%d/%d dead=%d/%d visible=%d inflight=%d", finished, len(keys)-len(wantDLQ), len(dead), len(wantDLQ), v, inf)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	calls, done := e.fx.snapshot()
	l := ledger{Submitted: len(keys)}
	deadBy := map[string][]dlqMessage{}
	for _, d := range dead {
		deadBy[d.Key] = append(deadBy[d.Key], d)
	}
	for _, k := range keys {
		l.Attempts += calls[k]
		if done[k] > 1 {
			l.DuplicateEffects += done[k] - 1
			e.t.Errorf("key %s: side effect committed %d times", k, done[k])
		}
		if code, ok := wantDLQ[k]; ok {
			ds := deadBy[k]
			switch {
			case len(ds) != 1:
				e.t.Errorf("key %s: %d DLQ copies, want 1", k, len(ds))
				l.Lost++
			case ds[0].Code != code || ds[0].Message == "" || ds[0].Attempts == "":
				e.t.Errorf("key %s: DLQ diagnosis %+v, want code %s with message and attempts", k, ds[0], code)
			case ds[0].TraceParent == "" && k != "<malformed>":
				e.t.Errorf("key %s: original traceparent attribute not carried to the DLQ", k)
			}
			if len(ds) > 0 {
				l.DeadLettered++
			}
			if done[k] != 0 {
				e.t.Errorf("key %s: dead-lettered but committed %d side effects", k, done[k])
			}
			continue
		}
		if len(deadBy[k]) > 0 {
			e.t.Errorf("key %s: unexpectedly dead-lettered: %+v", k, deadBy[k])
		}
		if done[k] == 0 {
			l.Lost++
			e.t.Errorf("key %s: lost (never completed)", k)
			continue
		}
		if st := e.record(k); st != "done" {
			e.t.Errorf("key %s: idempotency record %q, want done", k, st)
		}
		l.Completed++
	}
	if v, inf := e.queueDepth(e.queueURL); v+inf != 0 {
		e.t.Errorf("source queue not empty: %d visible, %d in flight", v, inf)
	}
	if l.Completed+l.DeadLettered != l.Submitted || l.Lost != 0 {
		e.t.Errorf("ledger does not balance: %+v", l)
	}
	e.t.Logf("ledger: submitted=%d completed_once=%d dead_lettered=%d lost=%d duplicate_side_effects=%d handler_attempts=%d",
		l.Submitted, l.Completed, l.DeadLettered, l.Lost, l.DuplicateEffects, l.Attempts)
	return l
}

func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	sort.Strings(out)
	return out
}

func parseCfg(raw string) (*config.Config, error) { return config.Parse("bench.json", []byte(raw)) }
