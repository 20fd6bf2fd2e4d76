package dlq_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// kumo has no message move task API (it answers InvalidAction), so these tests run against an
// httptest server that asserts the exact SQS JSON-protocol requests (X-Amz-Target
// AmazonSQS.<Action>, application/x-amz-json-1.0) and answers as the SQS API reference
// documents StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask.
type moveServer struct {
	t      *testing.T
	mu     sync.Mutex
	calls  []string // actions in order
	bodies map[string][]map[string]any
	lists  int // ListMessageMoveTasks answered so far
	// script answers the n-th ListMessageMoveTasks (0-based).
	script    func(n int) map[string]any
	noManaged bool // answer the move task actions as kumo does
}

const (
	dlqARN   = "arn:aws:sqs:us-east-1:123456789012:f-solver-dlq"
	queueARN = "arn:aws:sqs:us-east-1:123456789012:f-solver"
)

func (s *moveServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
		s.t.Errorf("%s: %s with Content-Type %q", target, r.Method, r.Header.Get("Content-Type"))
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("%s: body %q: %v", target, raw, err)
	}
	s.mu.Lock()
	s.calls = append(s.calls, target)
	s.bodies[target] = append(s.bodies[target], body)
	n := s.lists
	if target == "AmazonSQS.ListMessageMoveTasks" {
		s.lists++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	answer := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	switch target {
	case "AmazonSQS.GetQueueAttributes":
		arn := queueARN
		if body["QueueUrl"] == "https://sqs.test/f-solver-dlq" {
			arn = dlqARN
		}
		answer(map[string]any{"Attributes": map[string]string{"QueueArn": arn}})
	case "AmazonSQS.StartMessageMoveTask", "AmazonSQS.ListMessageMoveTasks", "AmazonSQS.CancelMessageMoveTask":
		if s.noManaged {
			w.WriteHeader(http.StatusBadRequest)
			answer(map[string]any{"__type": "InvalidAction", "message": "The action is not valid"})
			return
		}
		switch target {
		case "AmazonSQS.StartMessageMoveTask":
			answer(map[string]any{"TaskHandle": "task-handle-1"})
		case "AmazonSQS.ListMessageMoveTasks":
			answer(s.script(n))
		default:
			answer(map[string]any{"ApproximateNumberOfMessagesMoved": 2})
		}
	default:
		s.t.Errorf("unexpected action %q", target)
		w.WriteHeader(http.StatusBadRequest)
	}
}

func entry(status string, moved, toMove int) map[string]any {
	e := map[string]any{"Status": status, "SourceArn": dlqARN, "DestinationArn": queueARN,
		"ApproximateNumberOfMessagesMoved": moved, "ApproximateNumberOfMessagesToMove": toMove,
		"StartedTimestamp": 1764600000000}
	if status == "RUNNING" {
		e["TaskHandle"] = "task-handle-1" // listed only while running
	}
	return map[string]any{"Results": []any{e}}
}

func newMoveServer(t *testing.T, script func(int) map[string]any) (*moveServer, dlq.API, *dlq.Target) {
	s := &moveServer{t: t, bodies: map[string][]map[string]any{}, script: script}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{Region: "us-east-1", Endpoint: srv.URL,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	tg := &dlq.Target{Class: "solver", Queue: "f-solver", DLQ: "f-solver-dlq", QueueURL: "https://sqs.test/f-solver", DLQURL: "https://sqs.test/f-solver-dlq"}
	return s, awsconfig.SQS(cfg), tg
}

func TestManagedRedriveRequestsAndProgress(t *testing.T) {
	s, api, tg := newMoveServer(t, func(n int) map[string]any {
		if n == 0 {
			return entry("RUNNING", 2, 5)
		}
		return entry("COMPLETED", 5, 5)
	})
	var seen []dlq.Task
	task, err := dlq.Redrive(context.Background(), api, tg, dlq.ManagedOptions{Rate: 700, Interval: time.Millisecond,
		Progress: func(k dlq.Task) { seen = append(seen, k) }})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != "COMPLETED" || task.Moved != 5 || len(seen) != 2 || seen[0].Moved != 2 || seen[0].ToMove != 5 {
		t.Fatalf("task %+v, progress %+v", task, seen)
	}
	start := s.bodies["AmazonSQS.StartMessageMoveTask"]
	// The destination is named (the worker dead-letters, so SQS does not know the source)
	// and the rate is capped at SQS's 500.
	want := map[string]any{"SourceArn": dlqARN, "DestinationArn": queueARN, "MaxNumberOfMessagesPerSecond": float64(500)}
	if len(start) != 1 || !equalJSON(start[0], want) {
		t.Errorf("StartMessageMoveTask body %v, want %v", start, want)
	}
	for _, b := range s.bodies["AmazonSQS.ListMessageMoveTasks"] {
		if !equalJSON(b, map[string]any{"SourceArn": dlqARN, "MaxResults": float64(1)}) {
			t.Errorf("ListMessageMoveTasks body %v", b)
		}
	}
	if len(s.bodies["AmazonSQS.CancelMessageMoveTask"]) != 0 {
		t.Error("a finished task was cancelled")
	}
}

func TestManagedRedriveCancelsOnInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, api, tg := newMoveServer(t, func(n int) map[string]any {
		if n == 0 {
			cancel() // Ctrl-C while the task runs
			return entry("RUNNING", 2, 5)
		}
		return entry("CANCELLED", 2, 5)
	})
	task, err := dlq.Redrive(ctx, api, tg, dlq.ManagedOptions{Interval: time.Millisecond})
	if !errors.Is(err, context.Canceled) || task.Status != "CANCELLED" || task.Moved != 2 {
		t.Fatalf("task %+v, err %v", task, err)
	}
	c := s.bodies["AmazonSQS.CancelMessageMoveTask"]
	if len(c) != 1 || !equalJSON(c[0], map[string]any{"TaskHandle": "task-handle-1"}) {
		t.Errorf("CancelMessageMoveTask bodies %v", c)
	}
	if start := s.bodies["AmazonSQS.StartMessageMoveTask"]; len(start) != 1 || start[0]["MaxNumberOfMessagesPerSecond"] != nil {
		t.Errorf("without --rate SQS picks the rate: %v", start)
	}
}

func TestManagedRedriveMissingAPI(t *testing.T) {
	s, api, tg := newMoveServer(t, nil)
	s.noManaged = true
	_, err := dlq.Redrive(context.Background(), api, tg, dlq.ManagedOptions{})
	if !errors.Is(err, dlq.ErrNoManagedRedrive) {
		t.Fatalf("err %v, want ErrNoManagedRedrive", err)
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
