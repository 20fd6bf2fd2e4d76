package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// recordingPublisher keeps every entry it is asked to publish.
type recordingPublisher struct {
	mu      sync.Mutex
	entries []events.Entry
}

func (p *recordingPublisher) PublishAll(_ context.Context, entries []events.Entry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries = append(p.entries, entries...)
	return nil
}

func (p *recordingPublisher) take() []events.Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.entries
	p.entries = nil
	return out
}

// outputCfg is a class that declares its output ({status, total}) and emits invoice.extracted,
// whose detail requires status and total (from the result) and conversation_id (carried). It
// allows the model policies fast (default) and long.
func outputCfg(table string, threshold int) string {
	policy := `{"targets":["bedrock/m"],"fallbacks":[],"retries":0,"timeout_seconds":60,"allowed_fails":1,"cooldown_seconds":1,"max_in_flight":1,"tokens_per_minute":1}`
	return fmt.Sprintf(`{"format_version":1,"fleet":"ov","class":"extract","region":"us-east-1","runtime":"eks",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":30,"heartbeat_seconds":10,"wait_time_seconds":1,"max_messages":10,"max_receives":4},
 "concurrency":1,"step":{"p95_seconds":1,"max_seconds":10},"retry":{"max_attempts":4,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":%q,"window_seconds":3600,"key":[]},"claim_check":{"bucket":"b","threshold_bytes":%d,"read_prefixes":["inputs/"]},
 "events":{"bus":"b","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[{"source":"fleet.ov","detail_type":"invoice.extracted","version":1,
  "detail":{"carry":["conversation_id","status","total"],"from_output":["status","total"],"worker_fields":["agent_class","result","trace_id"],
   "schema":{"type":"object","additionalProperties":false,"required":["trace_id","conversation_id","status","total"],
    "properties":{"trace_id":{"type":"string"},"agent_class":{"type":"string"},"conversation_id":{"type":"string"},"result":{},"result_ref":{"type":"object"},
     "status":{"enum":["SUCCEEDED","FAILED"]},"total":{"type":"number"}}}}}]},
 "output":{"max_bytes":4096,"schema":{"type":"object","required":["status","total"],"properties":{"status":{"enum":["SUCCEEDED","FAILED"]},"total":{"type":"number"},"note":{"type":"string"}}}},
 "handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"fast","allowed":["fast","long"],"policies":{"fast":%s,"long":%s}},"telemetry":{"service_name":"ov","metrics_addr":""}}`, table, threshold, policy, policy)
}

type outputRig struct {
	w      *worker.Worker
	pub    *recordingPublisher
	cb     *fakeCallbacks
	calls  atomic.Int64
	policy atomic.Value // the ModelPolicy of the last handler call
	answer atomic.Value // an answerOf: what the handler returns (string), or an error
}

func newOutputRig(t *testing.T, threshold int) *outputRig {
	t.Helper()
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "ov")
	cfg, err := parseCfg(outputCfg(table, threshold))
	if err != nil {
		t.Fatal(err)
	}
	r := &outputRig{pub: &recordingPublisher{}, cb: newFakeCallbacks()}
	clk := newFixClock()
	r.w = &worker.Worker{Cfg: cfg, Idem: fixStore(kumotest.DynamoDB(awsCfg), table, clk), Events: r.pub, Callbacks: r.cb,
		Payloads: &memPayloads{objects: map[string][]byte{}}, Now: clk.now,
		Handler: handler.Func(func(_ context.Context, req handler.Request) (json.RawMessage, error) {
			r.calls.Add(1)
			r.policy.Store(req.ModelPolicy)
			switch a := r.answer.Load().(answerOf).v.(type) {
			case error:
				return nil, a
			case string:
				return json.RawMessage(a), nil
			}
			return nil, nil
		})}
	return r
}

func taskBody(id, detail string) []byte {
	return []byte(fmt.Sprintf(`{"TaskToken":"tok-%s","execution_id":"arn:exec:%s","state":"Extract","trace_id":"t-%s","detail":%s}`, id, id, id, detail))
}

// A handler result fills the declared properties its output declares; the worker's own fields
// win over it, the consumed detail fills the rest; the task's output is the same object.
func TestOutputFillsTheEvent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int // claim_check threshold: small = the result goes to S3 and only its fields ride along
	}{{"inline", 204800}, {"claim-checked", 16}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newOutputRig(t, tc.threshold)
			// The result tries to override trace_id and carries a field no event declares.
			r.answer.Store(answerOf{`{"status":"SUCCEEDED","total":12.5,"trace_id":"forged","note":"n"}`})
			res := r.w.Process(context.Background(), worker.Delivery{MessageID: "m", Attempt: 1,
				Body: taskBody(tc.name, `{"trace_id":"t-`+tc.name+`","conversation_id":"c-1","status":"FAILED"}`)})
			if res.Action != queue.Delete || res.Reason != nil {
				t.Fatalf("verdict %v %v", res.Action, res.Reason)
			}
			entries := r.pub.take()
			if len(entries) != 1 {
				t.Fatalf("%d entries", len(entries))
			}
			var d map[string]json.RawMessage
			_ = json.Unmarshal(entries[0].Detail, &d)
			want := map[string]string{"status": `"SUCCEEDED"`, "total": `12.5`, "conversation_id": `"c-1"`, "trace_id": `"t-` + tc.name + `"`, "agent_class": `"extract"`}
			for k, v := range want {
				if string(d[k]) != v {
					t.Errorf("detail.%s = %s, want %s (detail %s)", k, d[k], v, entries[0].Detail)
				}
			}
			if _, ok := d["note"]; ok {
				t.Errorf("an undeclared result property entered the detail: %s", entries[0].Detail)
			}
			succ, _ := r.cb.snapshot()
			var task map[string]json.RawMessage
			if err := json.Unmarshal([]byte(succ["tok-"+tc.name]), &task); err != nil {
				t.Fatalf("task output %q: %v", succ["tok-"+tc.name], err)
			}
			if string(task["status"]) != `"SUCCEEDED"` || string(task["total"]) != `12.5` {
				t.Errorf("task output %s does not carry the result's status and total", succ["tok-"+tc.name])
			}
			if _, ref := task["result_ref"]; ref != (tc.threshold < 100) {
				t.Errorf("task output %s: result_ref present = %v", succ["tok-"+tc.name], ref)
			}
		})
	}
}

// A result that does not fit output is dead-lettered at once as HandlerOutputInvalid with the
// reason: no event, no task success, no record of success (the work is released).
func TestOutputContractRefusesMisfits(t *testing.T) {
	r := newOutputRig(t, 204800)
	big := `{"status":"SUCCEEDED","total":1,"note":"` + strings.Repeat("x", 5000) + `"}`
	for i, tc := range []struct {
		answer any
		reason string
	}{
		{`{"total":"twelve"}`, "result/total"},
		{`{"status":"SUCCEEDED","total":"twelve"}`, "number"},
		{`[1,2]`, "object"},
		{`"done"`, "object"},
		{big, "above output.max_bytes 4096"},
		{&retry.Error{Code: wire.BadOutput, Message: "stdout is not one JSON value: hello"}, "not one JSON value"},
		{&retry.Error{Code: wire.OutputTooLarge, Message: "stdout above 16777216 bytes"}, "above"},
	} {
		id := fmt.Sprint("bad", i)
		r.answer.Store(answerOf{tc.answer})
		res := r.w.Process(context.Background(), worker.Delivery{MessageID: id, Attempt: 1, Body: taskBody(id, `{"conversation_id":"c"}`)})
		if res.Action != queue.DeadLetter || code(res) != string(wire.HandlerOutputInvalid) || !strings.Contains(res.Reason.Message, tc.reason) {
			t.Errorf("%v: verdict %v %v, want a dead letter %s mentioning %q", tc.answer, res.Action, res.Reason, string(wire.HandlerOutputInvalid), tc.reason)
		}
		if len(res.Reason.Message) > 1024 {
			t.Errorf("reason is %d bytes, want at most 1 KiB", len(res.Reason.Message))
		}
		succ, fail := r.cb.snapshot()
		if _, ok := succ["tok-"+id]; ok || fail["tok-"+id] != string(wire.HandlerOutputInvalid) {
			t.Errorf("%v: task success=%v failure=%q", tc.answer, ok, fail["tok-"+id])
		}
		// The work is released: a fixed handler runs it again rather than being answered
		// from a record of success.
		r.answer.Store(answerOf{`{"status":"FAILED","total":0}`})
		if again := r.w.Process(context.Background(), worker.Delivery{MessageID: id, Attempt: 2, Body: taskBody(id, `{"conversation_id":"c"}`)}); again.Action != queue.Delete || again.Duplicate {
			t.Errorf("%v: after the misfit the work was not run again: %v duplicate=%v %v", tc.answer, again.Action, again.Duplicate, again.Reason)
		}
		if n := len(r.pub.take()); n != 1 {
			t.Errorf("%v: %d events, want only the fixed run's", tc.answer, n)
		}
	}
}

// The seed's envelope: an event older than its ttl_seconds is dead-lettered Expired without
// running the handler; a TTL that has not run out bounds the step.
func TestTTLExpires(t *testing.T) {
	r := newOutputRig(t, 204800)
	r.answer.Store(answerOf{`{"status":"SUCCEEDED","total":1}`})
	old := r.w.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	body := func(id string, ttl int) []byte {
		return []byte(fmt.Sprintf(`{"version":"0","id":%q,"detail-type":"invoice.requested","source":"s","time":%q,"detail":{"trace_id":%q,"conversation_id":"c","ttl_seconds":%d}}`, id, old, id, ttl))
	}
	res := r.w.Process(context.Background(), worker.Delivery{MessageID: "e1", Attempt: 1, Body: body("e1", 3600)})
	if res.Action != queue.DeadLetter || code(res) != string(wire.Expired) || r.calls.Load() != 0 {
		t.Fatalf("expired: %v %v, handler calls %d", res.Action, res.Reason, r.calls.Load())
	}
	if n := len(r.pub.take()); n != 0 {
		t.Errorf("an expired event emitted %d events", n)
	}
	res = r.w.Process(context.Background(), worker.Delivery{MessageID: "e2", Attempt: 1, Body: body("e2", 3*3600)})
	if res.Action != queue.Delete || r.calls.Load() != 1 {
		t.Fatalf("within ttl: %v %v, handler calls %d", res.Action, res.Reason, r.calls.Load())
	}
}

// model_policy picks one of the class's allowed policies; anything else is refused for that
// message, never replaced by the default.
func TestModelPolicyAllowed(t *testing.T) {
	r := newOutputRig(t, 204800)
	r.answer.Store(answerOf{`{"status":"SUCCEEDED","total":1}`})
	for _, tc := range []struct {
		id, field string
		want      string // handler's ModelPolicy, or "refused"
	}{
		{"p1", `"model_policy":"long",`, "long"},
		{"p2", ``, ""},
		{"p3", `"model_policy":"slow",`, "refused"},
		{"p4", `"model_policy":"",`, "malformed"},
	} {
		before := r.calls.Load()
		res := r.w.Process(context.Background(), worker.Delivery{MessageID: tc.id, Attempt: 1, Body: taskBody(tc.id, `{`+tc.field+`"conversation_id":"c"}`)})
		switch tc.want {
		case "refused":
			_, fail := r.cb.snapshot()
			if res.Action != queue.DeadLetter || code(res) != string(wire.ModelPolicyNotAllowed) || r.calls.Load() != before ||
				!strings.Contains(res.Reason.Message, "fast, long") || fail["tok-"+tc.id] != string(wire.ModelPolicyNotAllowed) {
				t.Errorf("%s: %v %v, task failure %q", tc.id, res.Action, res.Reason, fail["tok-"+tc.id])
			}
		case "malformed":
			if res.Action != queue.DeadLetter || code(res) != "MalformedMessage" {
				t.Errorf("%s: %v %v", tc.id, res.Action, res.Reason)
			}
		default:
			if res.Action != queue.Delete || r.policy.Load() != tc.want {
				t.Errorf("%s: %v %v, handler got policy %q want %q", tc.id, res.Action, res.Reason, r.policy.Load(), tc.want)
			}
		}
	}
}

// answerOf wraps the rig's answer so one atomic.Value holds strings and errors alike.
type answerOf struct{ v any }
