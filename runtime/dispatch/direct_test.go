package dispatch_test

// Tests that call Dispatch directly (no queue): the fake AgentCore of dispatch_test.go answers
// with canned AWS responses, so they need no emulator.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockagentcore"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
)

// direct returns a dispatcher aimed at a fake AgentCore that serves only its script, and the
// fake, and the dispatcher's log.
func direct(t *testing.T) (*dispatch.Dispatcher, *fakeAgentCore, *bytes.Buffer) {
	t.Helper()
	fake := &fakeAgentCore{t: t}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{Region: "us-east-1", MaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	d := &dispatch.Dispatcher{
		API:        bedrockagentcore.NewFromConfig(cfg, func(o *bedrockagentcore.Options) { o.BaseEndpoint = aws.String(srv.URL) }),
		RuntimeARN: testARN, Class: "deep", SyncLimit: time.Second, Hold: 10 * time.Second,
		Policy: retry.Policy{MaxAttempts: 3, Base: 100 * time.Millisecond, Cap: time.Second},
		Log:    slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return d, fake, &log
}

type brokenTasks struct{}

func (brokenTasks) Failure(context.Context, string, string, string) error {
	return errors.New("states unreachable")
}

// A task token whose SendTaskFailure fails: the dead letter stands, and the failure is logged
// to the dispatcher's own logger (the operator's only trace of a workflow left to its timeout).
func TestTaskFailureErrorIsLogged(t *testing.T) {
	d, fake, log := direct(t)
	d.Tasks = brokenTasks{}
	fake.queue(awsError(403, "AccessDeniedException", "not authorized", ""))
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1,
		Body: `{"TaskToken":"tok-1","detail":{"trace_id":"t-1"}}`}, time.Time{})
	if out.Action != queue.DeadLetter || out.Reason == nil || out.Reason.Code != "AccessDeniedException" {
		t.Fatalf("outcome %+v reason %+v, want a dead letter (AccessDeniedException)", out, out.Reason)
	}
	if s := log.String(); !strings.Contains(s, "SendTaskFailure failed") || !strings.Contains(s, "states unreachable") {
		t.Errorf("log %q: the failed SendTaskFailure is not reported", s)
	}
}
