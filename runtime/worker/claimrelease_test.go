package worker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// failingDeletes is the real DynamoDB client (kumo) with every DeleteItem failing: the
// idempotency claim cannot be given back.
type failingDeletes struct{ idem.DynamoAPI }

func (failingDeletes) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errors.New("injected: ProvisionedThroughputExceeded")
}

// A claim the worker gives back on a verdict (here: the receive limit) that DynamoDB refuses
// to delete is logged, since the next attempt then waits for the lease; a claim given back
// logs nothing. The verdict stands either way.
func TestAbandonFailureIsLogged(t *testing.T) {
	for _, broken := range []bool{false, true} {
		e := newJobsEnv(t)
		var log bytes.Buffer
		e.w.Log = slog.New(slog.NewTextHandler(&log, nil))
		if broken {
			d := e.w.Idem.(*idem.Dynamo)
			e.w.Idem = &idem.Dynamo{API: failingDeletes{d.API}, Table: d.Table, Class: d.Class, Window: d.Window}
		}
		const id = "5d0f6c1e-0000-4000-8000-000000000031"
		e.queued(t, id)
		res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(id), Attempt: 9})
		if res.Action != queue.DeadLetter || code(res) != string(wire.ReceiveLimitExceeded) {
			t.Fatalf("broken=%v: verdict %v %v, want DeadLetter/ReceiveLimitExceeded", broken, res.Action, res.Reason)
		}
		if e.calls.Load() != 0 {
			t.Errorf("broken=%v: the handler ran %d times past the receive limit", broken, e.calls.Load())
		}
		logged := strings.Contains(log.String(), "could not release idempotency claim") && strings.Contains(log.String(), "injected")
		if logged != broken {
			t.Errorf("broken=%v: log %q; want the failed release logged exactly when it fails", broken, log.String())
		}
	}
}

// A queue name that does not resolve is a startup error naming the queue (source or DLQ) and
// saying what to set, not a bare SDK error.
func TestMissingQueueIsNamed(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, missing := range []string{"queue", "dlq"} {
		cfg := *e.cfg
		cfg.QueueURL, cfg.DLQURL = "", ""
		name := kumotest.Name(t, "absent")
		if missing == "queue" {
			cfg.Queue.Name = name
		} else {
			cfg.Queue.DLQName = name
		}
		_, err := worker.Build(context.Background(), &cfg, worker.BuildOptions{
			Getenv: e.getenv, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			AWSOptions: awsconfig.Options{Endpoint: kumotest.Endpoint, Region: kumotest.Region,
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		})
		if err == nil || !strings.Contains(err.Error(), `queue "`+name+`" does not exist (set FLEET_QUEUE_URL / FLEET_DLQ_URL`) {
			t.Errorf("missing %s: Build error %v, want one naming %q as missing", missing, err, name)
		}
	}
}
