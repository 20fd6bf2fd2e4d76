package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/worker"
)

// TestFairnessNoisyTenant is issue 38's fairness check on kumo: tenant A floods the class
// queue with 100× tenant B's messages, sent first, so without a cap B waits behind A's whole
// backlog (every slot busy with A: 100 steps of 1 s on 8 slots, ~12 s). With fairness
// {key: conversation_id, max_in_flight_per_key: 4} (the default for 8 slots), B's step must start within
// one step duration of the worker's start, every message completes exactly once, and
// nothing is dead-lettered, though A's messages are deferred under max_receives 1: one more
// receive of any message would dead-letter it.
func TestFairnessNoisyTenant(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	const (
		stepMS   = 1000 // the harness's step.p95
		perB     = 1
		perA     = 100 * perB
		capOfKey = 4
	)
	e := newEnv(t, envOpts{concurrency: 8, maxReceives: 1, maxAttempts: 1, visibility: 10})
	e.cfg.Fairness = &config.Fairness{Key: "conversation_id", MaxInFlightPerKey: capOfKey}

	var all, bKeys []string
	for i := range perA {
		k := fmt.Sprintf("a-%03d", i)
		all = append(all, k)
		e.send(envelope(k, stepSpec{TraceID: k, ConversationID: "tenant-a", SleepMS: stepMS}), "")
	}
	for i := range perB {
		k := fmt.Sprintf("b-%03d", i)
		all, bKeys = append(all, k), append(bKeys, k)
		e.send(envelope(k, stepSpec{TraceID: k, ConversationID: "tenant-b", SleepMS: stepMS}), "")
	}

	c := e.startFairPoller()
	start := time.Now()
	bDone := waitDone(t, e, bKeys, 60*time.Second)
	step := time.Duration(stepMS) * time.Millisecond
	for _, k := range bKeys {
		e.fx.mu.Lock()
		wait := e.fx.first[k].Sub(start)
		e.fx.mu.Unlock()
		t.Logf("tenant B's %s started %v after the worker (one step: %v), behind %d of tenant A's; done at %v", k, wait.Round(time.Millisecond), step, perA, bDone.Round(time.Millisecond))
		// B runs in the slot A's cap leaves free, once the receives have passed over A's
		// deferred messages. Without the cap it waits for ~perA/8 steps of A.
		if wait > step {
			t.Errorf("tenant B's %s waited %v behind tenant A's burst; want ≤ one step (%v)", k, wait, step)
		}
	}
	if n := c.InFlight("tenant-a"); n > capOfKey {
		t.Errorf("tenant A has %d steps in flight, above its cap %d", n, capOfKey)
	}
	l := e.account(all, nil, 2*time.Minute)
	t.Logf("all done in %v; deferred %d, run over the cap %d, dead-lettered %d", time.Since(start).Round(time.Millisecond), c.Stats.Deferred.Load(), c.Stats.OverCap.Load(), c.Stats.DeadLettered.Load())
	if n := c.Stats.DeadLettered.Load(); n != 0 || l.Completed != l.Submitted {
		t.Errorf("dead-lettered %d, completed %d of %d; fairness must never dead-letter or lose a message", n, l.Completed, l.Submitted)
	}
	if c.Stats.Deferred.Load() == 0 || c.Stats.OverCap.Load() != 0 {
		t.Errorf("deferred %d, over the cap %d: want deferrals and none over the cap", c.Stats.Deferred.Load(), c.Stats.OverCap.Load())
	}
}

// startFairPoller runs the class's poller in process and returns its consumer (its stats
// and per-key counts); the test's end stops it.
func (e *env) startFairPoller() *queue.Consumer {
	e.t.Helper()
	cfg := *e.cfg
	rt, err := worker.Build(context.Background(), &cfg, worker.BuildOptions{
		Getenv: e.getenv,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AWSOptions: awsconfig.Options{Endpoint: kumotest.Endpoint, Region: kumotest.Region, Counter: e.counter,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := rt.Worker.NewPoller(rt.SQS, worker.PollOptions{QueueURL: cfg.QueueURL, DLQURL: cfg.DLQURL, DrainTimeout: 5 * time.Second, Logger: rt.Log})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx); _ = rt.Close(context.Background()) }()
	e.t.Cleanup(func() { cancel(); wg.Wait() })
	return c
}

// waitDone waits until every key's side effect is committed and returns how long it took.
func waitDone(t *testing.T, e *env, keys []string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		_, done := e.fx.snapshot()
		n := 0
		for _, k := range keys {
			if done[k] > 0 {
				n++
			}
		}
		if n == len(keys) {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("keys %v not done within %v", keys, timeout)
	return 0
}
