package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/worker"
)

// beatSignal wraps a store and reports each successful lease renewal.
type beatSignal struct {
	idem.Store
	beats chan struct{}
}

func (b *beatSignal) Extend(ctx context.Context, key, owner string, lease time.Duration) error {
	err := b.Store.Extend(ctx, key, owner, lease)
	if err == nil {
		select {
		case b.beats <- struct{}{}:
		default:
		}
	}
	return err
}

// TestLeaseOutlivesStepWithDuplicates is the production failure the lease exists for, on
// kumo's DynamoDB in real time: a 2 s lease (one visibility cycle), a 5 s step, a 1 s
// heartbeat, and a second worker that receives the same work while the step runs, each time
// just after a renewal (so past the first lease's end). Exactly one side effect; every
// renewal moves lease_until forward. A duplicate whose window (here a Lambda invocation's
// last second) cannot outlast the holder's lease is released as Busy for at least the rest of
// that lease (a release any earlier costs a receive and, with the receive limit, can
// dead-letter live work); one with a full window holds the message until the holder
// finishes and is answered from the record.
//
// Mutants this catches (each checked by hand): beat skipping Idem.Extend (the duplicate
// reclaims the expired lease and runs the side effect again); claim's Busy wait ignoring
// claim.LeaseUntil (a 1 s + jitter release, under the 2–3 s left).
func TestLeaseOutlivesStepWithDuplicates(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "lease")
	api := kumotest.DynamoDB(awsCfg)
	cfg := eksStepConfig(t, "ls", table, 2, 1)
	const step = 5 * time.Second
	var effects atomic.Int64
	h := handler.Func(func(ctx context.Context, _ handler.Request) (json.RawMessage, error) {
		effects.Add(1) // the side effect
		select {
		case <-time.After(step):
			return json.RawMessage(`{"ok":true}`), nil
		case <-ctx.Done():
			return nil, retry.Retryable("Cancelled", context.Cause(ctx))
		}
	})
	newWorker := func(s idem.Store) *worker.Worker {
		return &worker.Worker{Cfg: cfg, Handler: h, StepHeartbeat: time.Second,
			Idem: s, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	store := func() *idem.Dynamo { return &idem.Dynamo{API: api, Table: table, Class: cfg.Class, Window: time.Hour} }
	holder := &beatSignal{Store: store(), beats: make(chan struct{}, 1)}
	a, b := newWorker(holder), newWorker(store())

	body := []byte(`{"id":"evt-lease-1","detail-type":"x","source":"y","detail":{"trace_id":"lease-1"}}`)
	start := time.Now()
	done := make(chan worker.Result, 1)
	go func() {
		done <- a.Process(context.Background(), worker.Delivery{MessageID: "a", Body: body, Attempt: 1})
	}()

	leaseUntil := func() int64 {
		out, err := api.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "lease-1"}, "sk": &ddbtypes.AttributeValueMemberS{Value: cfg.Class}}})
		if err != nil || out.Item == nil {
			t.Fatalf("read the record: %v %v", out, err)
		}
		n, _ := out.Item["lease_until"].(*ddbtypes.AttributeValueMemberN)
		if n == nil {
			t.Fatalf("record without lease_until: %v", out.Item)
		}
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	// The first lease ends within 3 s of the claim (2 s rounded up to whole seconds).
	firstLeaseEnd := start.Add(3 * time.Second).Unix()
	var seen []int64
	dups := 0
	for time.Since(start) < step-time.Second {
		select {
		case <-holder.beats:
		case r := <-done:
			t.Fatalf("the step ended after %v, before its 5 s: %v %v", time.Since(start), r.Action, r.Reason)
		case <-time.After(3 * time.Second):
			t.Fatalf("no lease renewal within 3 s (after %v)", time.Since(start))
		}
		lu := leaseUntil()
		sent := time.Now()
		seen = append(seen, lu)
		if sent.Before(start.Add(2 * time.Second)) {
			continue // still inside the first lease: nothing to prove yet
		}
		r := b.Process(context.Background(), worker.Delivery{MessageID: "b", Body: body, Attempt: 1, InvocationDeadline: time.Now().Add(time.Second)})
		dups++
		if r.Action != queue.Release || code(r) != "Busy" {
			t.Fatalf("duplicate %d at %v: %v %v, want Release/Busy", dups, sent.Sub(start), r.Action, r.Reason)
		}
		if remaining := time.Unix(lu, 0).Sub(sent); r.Delay < remaining {
			t.Errorf("duplicate %d released for %v, under the %v left of the holder's lease", dups, r.Delay, remaining)
		}
	}
	held := b.Process(context.Background(), worker.Delivery{MessageID: "c", Body: body, Attempt: 1})
	if held.Action != queue.Delete || !held.Duplicate {
		t.Errorf("duplicate with a full window: %v dup=%v %v, want held until the holder finished, then answered", held.Action, held.Duplicate, held.Reason)
	}
	r := <-done
	if r.Action != queue.Delete || string(r.Output) != `{"ok":true}` {
		t.Fatalf("holder's verdict %v %v", r.Action, r.Reason)
	}
	if dups < 2 {
		t.Fatalf("only %d duplicates were delivered mid-step", dups)
	}
	if n := effects.Load(); n != 1 {
		t.Fatalf("side effect ran %d times for one unit of work", n)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Errorf("lease_until went back: %v", seen)
		}
	}
	if last := seen[len(seen)-1]; last <= firstLeaseEnd {
		t.Errorf("heartbeats never advanced the lease past its first end %d: %v", firstLeaseEnd, seen)
	}
	// After the step, the duplicate is answered from the record.
	if r := b.Process(context.Background(), worker.Delivery{MessageID: "b", Body: body, Attempt: 2}); r.Action != queue.Delete || !r.Duplicate {
		t.Fatalf("duplicate after the step: %v dup=%v %v", r.Action, r.Duplicate, r.Reason)
	}
}

// eksStepConfig is the runtime config of an eks class name whose idempotency records go to
// table, with the queue's visibility and heartbeat in seconds (retry base 100 ms, cap 1 s).
func eksStepConfig(t *testing.T, name, table string, visibility, heartbeat int) *config.Config {
	t.Helper()
	cfg, err := parseCfg(fmt.Sprintf(`{"format_version":1,"fleet":%[1]q,"class":%[1]q,"region":"us-east-1","runtime":"eks",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":%[3]d,"heartbeat_seconds":%[4]d,"wait_time_seconds":1,"max_messages":10,"max_receives":4},
 "concurrency":1,"step":{"p95_seconds":5,"max_seconds":10},"retry":{"max_attempts":4,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":%[2]q,"window_seconds":3600,"key":["trace_id"]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "events":{"bus":"","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":%[1]q,"metrics_addr":""}}`, name, table, visibility, heartbeat))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
