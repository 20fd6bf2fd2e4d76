package worker_test

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// A plain batch: every step completes once, nothing dead-lettered.
func TestFaultBaseline(t *testing.T) {
	e := newEnv(t, envOpts{heartbeat: 1})
	ks := keys("base", 25)
	for i, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k, Seq: i}), "")
	}
	e.startWorker(5 * time.Second)
	e.account(ks, nil, 30*time.Second)
}

// Steps of 4 s on a 2 s visibility timeout, two competing workers: the
// batched visibility heartbeat keeps every message with its first worker,
// so each step runs exactly once (no second delivery at all).
func TestFaultSlowStepHeartbeat(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{visibility: 2, heartbeat: 1})
	ks := keys("slow", 6)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k, SleepMS: 4000}), "")
	}
	e.startWorker(10 * time.Second)
	e.startWorker(10 * time.Second)
	l := e.account(ks, nil, 30*time.Second)
	if l.Attempts != len(ks) {
		t.Errorf("handler attempts = %d, want %d: a slow step was delivered twice", l.Attempts, len(ks))
	}
	if n := e.counter.CountOperation("sqs", "ChangeMessageVisibilityBatch"); n < 2 {
		t.Errorf("only %d visibility heartbeats for 4 s steps on a 2 s timeout", n)
	} else {
		t.Logf("visibility heartbeat calls: %d (batched)", n)
	}
}

// The same unit of work (same EventBridge event id) arrives as four SQS
// messages, concurrently and after completion: one side effect.
func TestFaultDuplicateDelivery(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{visibility: 3, heartbeat: 1})
	ks := keys("dup", 5)
	for _, k := range ks {
		body := envelope("evt-"+k, stepSpec{TraceID: k, SleepMS: 1500})
		for i := 0; i < 3; i++ {
			e.send(body, "")
		}
	}
	e.startWorker(5 * time.Second)
	e.startWorker(5 * time.Second)
	e.account(ks, nil, 40*time.Second)
	// A late duplicate of finished work is answered from the record.
	e.send(envelope("evt-"+ks[0], stepSpec{TraceID: ks[0], SleepMS: 1500}), "")
	l := e.account(ks, nil, 20*time.Second)
	if l.DuplicateEffects != 0 {
		t.Fatal("duplicate side effects")
	}
}

// Poison: a body that is not JSON, a 4xx handler answer, a spend-limit 429
// without retry-after. Each is dead-lettered on its first attempt with its
// diagnosis and the original attributes; good neighbours complete.
func TestFaultPoisonMessages(t *testing.T) {
	e := newEnv(t, envOpts{heartbeat: 1})
	good := keys("good", 4)
	for _, k := range good {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k}), "")
	}
	e.send(envelope("evt-p1", stepSpec{TraceID: "poison-400", Behavior: "poison"}), "")
	e.send(envelope("evt-p2", stepSpec{TraceID: "poison-spend", Behavior: "spend"}), "")
	e.send("this is not json", "")
	e.startWorker(5 * time.Second)
	ks := append(append([]string{}, good...), "poison-400", "poison-spend", "<malformed>")
	want := map[string]string{"poison-400": "HTTP400", "poison-spend": "SpendLimit", "<malformed>": "MalformedMessage"}
	l := e.account(ks, want, 30*time.Second)
	calls, _ := e.fx.snapshot()
	if calls["poison-400"] != 1 || calls["poison-spend"] != 1 {
		t.Errorf("non-retryable failures were retried: %v", calls)
	}
	if l.DeadLettered != 3 {
		t.Errorf("dead-lettered %d, want 3", l.DeadLettered)
	}
}

// A handler that fails twice (503) then succeeds completes once on the
// third call, inside its first receive; one that always fails is retried in process through
// each receive's 2 s step window, released, and dead-lettered by the worker at max_attempts
// with RetriesExhausted naming the last cause, not silently redriven.
func TestFaultFailThenSucceed(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{heartbeat: 1, maxAttempts: 3, maxReceives: 4, stepMax: 2})
	e.send(envelope("evt-flaky", stepSpec{TraceID: "flaky", Behavior: "flaky", FailTimes: 2}), "")
	e.send(envelope("evt-down", stepSpec{TraceID: "down", Behavior: "always503"}), "")
	e.startWorker(5 * time.Second)
	e.account([]string{"flaky", "down"}, map[string]string{"down": "RetriesExhausted"}, 40*time.Second)
	calls, _ := e.fx.snapshot()
	// down: 3 windows of 2 s at full jitter capped at 1 s, at least two calls in each.
	if calls["flaky"] != 3 || calls["down"] < 6 {
		t.Errorf("handler calls: flaky=%d (want 3) down=%d (want ≥6: retried in process in each of 3 receives)", calls["flaky"], calls["down"])
	}
}

// workerBinary builds cmd/fleet-worker once per test process.
func workerBinary(t *testing.T) string {
	t.Helper()
	return verifytest.GoBinary(t, verifytest.WorkerPkg)
}

type proc struct {
	cmd  *exec.Cmd
	logs *strings.Builder
	done chan struct{} // closed at exit; err holds Wait's result
	err  error
}

func (e *env) startBinary(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(workerBinary(t), append([]string{"--config", e.cfgPath, "--mode", "poll"}, args...)...)
	cmd.Env = e.environ()
	return startProc(t, cmd)
}

// startProc starts cmd with its stderr captured, and kills it when the test ends (printing
// what it logged when the test failed).
func startProc(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, logs: &strings.Builder{}, done: make(chan struct{})}
	var mu sync.Mutex
	cmd.Stderr = writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return p.logs.Write(b) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("fleet-worker stderr:\n%s", p.logs.String())
		}
	})
	return p
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The real binary is SIGKILLed mid-step: no cleanup, no release. Its
// messages come back after the visibility timeout, the expired leases are
// reclaimed, and a second worker completes every step exactly once (the
// killed attempts never committed).
func TestFaultWorkerKilledMidStep(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{visibility: 3, heartbeat: 1})
	ks := keys("kill", 4)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k, SleepMS: 3000}), "")
	}
	p := e.startBinary(t)
	waitFor(t, "all steps to start in the binary", 15*time.Second, func() bool {
		calls, _ := e.fx.snapshot()
		return len(calls) == len(ks)
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	e.startWorker(5 * time.Second)
	l := e.account(ks, nil, 40*time.Second)
	if l.Attempts != 2*len(ks) {
		t.Errorf("handler attempts = %d, want %d (one killed, one completed per step)", l.Attempts, 2*len(ks))
	}
}

// SIGTERM to the real binary while a FIFO batch is busy: it stops
// receiving, finishes the in-flight step of each group, makes the received
// but unstarted messages visible at once, and exits 0. A second worker then
// completes the rest well before the visibility timeout would have let them
// reappear, in group order, each once.
func TestFaultSIGTERMDuringBusyBatch(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{fifo: true, visibility: 20, heartbeat: 5})
	var ks []string
	for g, conv := range []string{"conv-a", "conv-b"} {
		for i := 0; i < 5; i++ {
			k := conv + "-" + string(rune('0'+i))
			ks = append(ks, k)
			e.send(envelope("evt-"+k, stepSpec{TraceID: k, ConversationID: conv, Seq: g*100 + i, SleepMS: 1000}), conv)
			time.Sleep(3 * time.Millisecond) // distinct SentTimestamps: kumo has no SequenceNumber
		}
	}
	p := e.startBinary(t, "--drain-timeout", "10s")
	waitFor(t, "both groups' first steps to start", 15*time.Second, func() bool {
		calls, _ := e.fx.snapshot()
		return len(calls) >= 2
	})
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("worker exit: %v\n%s", p.err, p.logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("worker did not exit after SIGTERM")
	}
	exited := time.Since(start)
	_, done := e.fx.snapshot()
	if len(done) < 2 {
		t.Errorf("in-flight steps were not allowed to finish: %v", done)
	}
	if !strings.Contains(p.logs.String(), "released unstarted messages at shutdown") {
		t.Errorf("no unstarted release logged:\n%s", p.logs.String())
	}
	e.startWorker(5 * time.Second)
	l := e.account(ks, nil, 30*time.Second)
	total := time.Since(start)
	// 8 remaining 1 s steps, two groups in parallel: ~4 s. A message left
	// invisible would have waited for the 20 s visibility timeout.
	if total > 15*time.Second {
		t.Errorf("rest took %v after SIGTERM (exit after %v): unstarted messages were not released", total, exited)
	}
	last := map[string]int{}
	for _, c := range e.fx.commits() {
		if prev, ok := last[c.ConversationID]; ok && c.Seq < prev {
			t.Errorf("group %s committed seq %d after %d: order broken", c.ConversationID, c.Seq, prev)
		}
		last[c.ConversationID] = c.Seq
	}
	t.Logf("SIGTERM→exit %v, all done %v, ledger %+v", exited, total, l)
}

// The binary in agentcore mode serves /ping and /invocations, and a
// repeated invocation is answered from the idempotency record.
func TestBinaryAgentCoreMode(t *testing.T) {
	e := newEnv(t, envOpts{heartbeat: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := e.startBinary(t, "--mode", "agentcore", "--listen", addr)
	waitFor(t, "agentcore /ping", 15*time.Second, func() bool {
		r, err := http.Get("http://" + addr + "/ping")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 200
	})
	for i := 0; i < 2; i++ {
		r, err := http.Post("http://"+addr+"/invocations", "application/json", strings.NewReader(`{"trace_id":"ac-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || !strings.Contains(string(b), `"key":"ac-1"`) {
			t.Errorf("invocation %d: %d %s", i, r.StatusCode, b)
		}
	}
	if _, done := e.fx.snapshot(); done["ac-1"] != 1 {
		t.Errorf("side effects %d, want 1", done["ac-1"])
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("exit: %v\n%s", p.err, p.logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

// Earlier attempts that died without a verdict (here: four receives that
// were never answered) push the receive count past the limit: the worker
// dead-letters the message itself with ReceiveLimitExceeded and does not
// run the step again.
func TestFaultReceiveLimitExceeded(t *testing.T) {
	e := newEnv(t, envOpts{heartbeat: 1, maxAttempts: 4, maxReceives: 5})
	e.send(envelope("evt-crashy", stepSpec{TraceID: "crashy"}), "")
	for i := 0; i < 4; i++ { // four deliveries that "crashed": received, never answered
		out, err := e.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive %d: %v", i, err)
		}
		if _, err := e.sqs.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(e.queueURL), ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	e.startWorker(5 * time.Second)
	e.account([]string{"crashy"}, map[string]string{"crashy": "ReceiveLimitExceeded"}, 20*time.Second)
	if calls, _ := e.fx.snapshot(); calls["crashy"] != 0 {
		t.Errorf("handler ran %d times past the limit", calls["crashy"])
	}
}
