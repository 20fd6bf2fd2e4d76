package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

func TestAgentCoreContract(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "acidem")
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"t","class":"researcher","region":"us-east-1","runtime":"agentcore",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":60,"heartbeat_seconds":0,"wait_time_seconds":0,"max_messages":10,"max_receives":4},
 "concurrency":4,"step":{"p95_seconds":1,"max_seconds":30},"retry":{"max_attempts":4,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":%q,"window_seconds":3600,"key":["trace_id"]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "events":{"bus":"","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"t-researcher","metrics_addr":""}}`, table)
	cfg, err := config.Parse("ac.json", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	effects := map[string]int{}
	release := make(chan struct{})
	started := make(chan struct{})
	var startOnce sync.Once
	h := handler.Func(func(ctx context.Context, req handler.Request) (json.RawMessage, error) {
		switch req.Key {
		case "poison":
			return nil, retry.Permanent("BadInput", errors.New("no question"))
		case "down":
			// A throttle longer than the 30 s step window: no holding helps, so the
			// invocation answers at once with the throttle's delay.
			return nil, retry.FromStatus(503, "40", "")
		case "slow":
			startOnce.Do(func() { close(started) })
			<-release
		}
		mu.Lock()
		effects[req.Key]++
		mu.Unlock()
		return json.RawMessage(fmt.Sprintf(`{"answer":%q}`, req.Key)), nil
	})
	w := &worker.Worker{Cfg: cfg, Handler: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour}}
	s := &Server{Worker: w}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, 5*time.Second) }()
	base := "http://" + ln.Addr().String()

	ping := func() string {
		resp, err := http.Get(base + "/ping")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p struct {
			Status string `json:"status"`
			Last   int64  `json:"time_of_last_update"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.Last == 0 {
			t.Fatalf("ping body: %+v %v", p, err)
		}
		return p.Status
	}
	invoke := func(body string) (*http.Response, string) {
		resp, err := http.Post(base+"/invocations", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	if st := ping(); st != "Healthy" {
		t.Errorf("idle ping: %s", st)
	}
	resp, body := invoke(`{"trace_id":"t-1","question":"why"}`)
	if resp.StatusCode != 200 || body != `{"answer":"t-1"}` {
		t.Errorf("invoke: %d %s", resp.StatusCode, body)
	}
	resp, body = invoke(`{"trace_id":"t-1","question":"why"}`)
	if resp.StatusCode != 200 || body != `{"answer":"t-1"}` || resp.Header.Get("X-Fleet-Duplicate") != "true" {
		t.Errorf("repeat: %d %s dup=%q", resp.StatusCode, body, resp.Header.Get("X-Fleet-Duplicate"))
	}
	if effects["t-1"] != 1 {
		t.Errorf("repeat invocation ran the step again: %d", effects["t-1"])
	}
	// An EventBridge envelope works too.
	if resp, _ := invoke(`{"version":"0","id":"e-9","detail-type":"agent.step.requested","source":"s","detail":{"trace_id":"t-2"}}`); resp.StatusCode != 200 {
		t.Errorf("envelope: %d", resp.StatusCode)
	}
	if resp, body := invoke(`{"trace_id":"poison"}`); resp.StatusCode != 422 || !strings.Contains(body, "BadInput") {
		t.Errorf("poison: %d %s", resp.StatusCode, body)
	}
	if resp, body := invoke(`{"trace_id":"down"}`); resp.StatusCode != 503 || !slices.Contains([]string{"40", "41", "42", "43", "44"}, resp.Header.Get("Retry-After")) || !strings.Contains(body, `"retryable":true`) {
		t.Errorf("down: %d %s ra=%q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if resp, _ := invoke(`[1,2]`); resp.StatusCode != 422 {
		t.Errorf("malformed: %d", resp.StatusCode)
	}
	// Busy while a step runs, and the same work is not run twice at once.
	slowDone := make(chan int, 1)
	go func() { r, _ := invoke(`{"trace_id":"slow"}`); slowDone <- r.StatusCode }()
	// Wait for the step itself (it holds the claim then): HealthyBusy alone is set before the
	// claim is taken, and a duplicate sent in between could win the claim.
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow step never started")
	}
	deadline := time.Now().Add(5 * time.Second)
	for ping() != "HealthyBusy" {
		if time.Now().After(deadline) {
			t.Fatal("never HealthyBusy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, _ := invoke(`{"trace_id":"slow"}`); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("concurrent duplicate: %d, want 503 with Retry-After (lease held)", resp.StatusCode)
	}
	// Shutdown drains the running invocation.
	cancel()
	time.Sleep(100 * time.Millisecond)
	close(release)
	if code := <-slowDone; code != 200 {
		t.Errorf("in-flight invocation during shutdown: %d", code)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	if effects["slow"] != 1 {
		t.Errorf("slow effects: %d", effects["slow"])
	}
}

// A duplicate invocation of work another runtime holds (a session that moved, a second
// microVM) is answered "busy" with the rest of that lease as its delay, never "retry": the
// dispatcher keeps a busy message and asks again in the same session, while "retry" releases
// it, costing a receive per bounce and dead-lettering live work at the receive limit. The
// other holder is a real claim on kumo's DynamoDB.
//
// Mutant this catches (checked by hand): envelope mapping a Busy release to OutcomeRetry.
func TestOutcomeBusyDuplicateIsBusy(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "acbusy")
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"t","class":"researcher","region":"us-east-1","runtime":"agentcore",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":60,"heartbeat_seconds":0,"wait_time_seconds":0,"max_messages":10,"max_receives":4},
 "concurrency":4,"step":{"p95_seconds":1,"max_seconds":30},"retry":{"max_attempts":4,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":%q,"window_seconds":3600,"key":["trace_id"]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "events":{"bus":"","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"t-researcher","metrics_addr":""}}`, table)
	cfg, err := config.Parse("ac.json", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	api := kumotest.DynamoDB(awsCfg)
	var ran atomic.Int64
	h := handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
		ran.Add(1)
		return json.RawMessage(`{}`), nil
	})
	w := &worker.Worker{Cfg: cfg, Handler: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Idem: &idem.Dynamo{API: api, Table: table, Class: cfg.Class, Window: time.Hour}}
	other := &idem.Dynamo{API: api, Table: table, Class: cfg.Class, Window: time.Hour}
	const lease = 40 * time.Second
	if c, err := other.Acquire(context.Background(), "held-1", lease); err != nil || c.State != idem.Acquired {
		t.Fatalf("the other runtime's claim: %+v %v", c, err)
	}
	srv := httptest.NewServer((&Server{Worker: w, SyncLimit: 5 * time.Second}).Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/invocations", strings.NewReader(`{"trace_id":"held-1"}`))
	req.Header.Set(wire.HeaderOutcome, "1")
	req.Header.Set(SessionHeader, strings.Repeat("s", dispatch.MinSessionID))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e wire.OutcomeEnvelope
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || e.Outcome != wire.OutcomeBusy || e.Code != "Busy" {
		t.Fatalf("duplicate of held work: HTTP %d %+v, want 200 busy/Busy", resp.StatusCode, e)
	}
	if min := int((lease - 2*time.Second) / time.Second); e.RetryAfterSeconds < min {
		t.Errorf("retry_after_seconds %d, under the ~%d s left of the holder's lease", e.RetryAfterSeconds, min)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the duplicate ran the step %d times while another runtime held it", n)
	}
}
