package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/step"
	"github.com/fleetc/fleetc/runtime/worker"
)

// callbacks records the task tokens failed through the host's Step Functions client.
type callbacks struct {
	mu       sync.Mutex
	failures []string
}

func (c *callbacks) Success(context.Context, string, []byte) error { return nil }
func (c *callbacks) Heartbeat(context.Context, string) error       { return nil }
func (c *callbacks) Failure(_ context.Context, token, code, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, token+" "+code)
	return nil
}

func (c *callbacks) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.failures...)
}

// Run in poll mode, wired as fleet-worker --mode dispatch wires it: the class queue on kumo,
// the client from the environment's endpoint and runtime ARN, the host's task callbacks. A
// config without an agentcore section (the defaults: DEFAULT qualifier, the 14-minute sync
// limit) still dispatches, and a dead letter the dispatcher decides fails the task token
// through the host's callbacks.
func TestRunPollMode(t *testing.T) {
	awsCfg := kumotest.Require(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	_, qurl := kumotest.Queue(t, awsCfg, "runq", false, nil)
	_, dlq := kumotest.Queue(t, awsCfg, "rundlq", false, nil)
	cfg, err := config.Parse("deep.json", []byte(`{"format_version":1,"fleet":"fx","class":"deep","region":"us-east-1","runtime":"agentcore",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":2,"heartbeat_seconds":1,"wait_time_seconds":1,"max_messages":10,"max_receives":4},
 "concurrency":1,"step":{"p95_seconds":1,"max_seconds":30},"retry":{"max_attempts":3,"base_ms":100,"cap_ms":300},
 "idempotency":{"table":"unused","window_seconds":3600,"key":["trace_id"]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "events":{"bus":"","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"fx-deep","metrics_addr":""}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AgentCore != nil {
		t.Fatal("the config has an agentcore section; this test is about its absence")
	}
	cfg.QueueURL, cfg.DLQURL = qurl, dlq
	fake := &fakeAgentCore{t: t}
	fake.queue(awsError(403, "AccessDeniedException", "not authorized to perform bedrock-agentcore:InvokeAgentRuntime", ""))
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	client := awsconfig.SQS(awsCfg)
	body := `{"TaskToken":"tok-1","execution_id":"ex-1","state":"Research","detail":{"trace_id":"t-run"}}`
	if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(qurl), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	cb := &callbacks{}
	host := step.Host{Cfg: cfg, Worker: &worker.Worker{Cfg: cfg}, Callbacks: cb, SQS: client, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	env := map[string]string{config.EnvAgentRuntimeARN: testARN, config.EnvAgentCoreURL: srv.URL}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- dispatch.Run(ctx, host, func(k string) string { return env[k] }, 5*time.Second) }()
	deadline := time.After(20 * time.Second)
wait:
	for len(cb.seen()) == 0 {
		select {
		case err := <-stopped:
			t.Fatalf("Run ended early: %v", err)
		case <-deadline:
			t.Error("no task failure within 20 s")
			break wait
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	if err := <-stopped; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if got := cb.seen(); fmt.Sprint(got) != "[tok-1 AccessDeniedException]" {
		t.Errorf("task failures %q, want tok-1 failed with the AWS error", got)
	}
	if calls := fake.seen(); len(calls) != 1 || calls[0].Session != dispatch.SessionID("deep", "t-run") || !strings.Contains(calls[0].Body, "tok-1") {
		t.Errorf("calls %+v, want one in the trace's session with the message body", calls)
	}
}
