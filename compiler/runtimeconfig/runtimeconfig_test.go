package runtimeconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/compiler/ir"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
	"github.com/fleetc/fleetc/spec/diag"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	s, err := rc.Schema()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var examples = irtest.Examples

var lower = irtest.Load

var lowerSrc = irtest.LoadSource

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return m
}

// TestExamplesValidate writes every example's config set to disk and validates each file
// against the contract schema, plus the cross-field rules the worker enforces at start.
func TestExamplesValidate(t *testing.T) {
	sch := compileSchema(t)
	for _, p := range examples(t) {
		f := lower(t, p)
		files, ds := Generate(f)
		if len(ds) > 0 {
			t.Fatalf("%s: %v", p, ds)
		}
		want := len(f.Agents)
		if f.Tools != nil {
			want++ // tools/tools.json
		}
		if len(files) != want {
			t.Fatalf("%s: %d files for %d classes", p, len(files), len(f.Agents))
		}
		out := t.TempDir()
		for _, file := range files {
			dst := filepath.Join(out, filepath.FromSlash(file.Path))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, file.Bytes, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range f.Agents {
			name := filepath.Join(out, "runtime", a.Name+".json")
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if err := sch.Validate(decodeAny(t, b)); err != nil {
				t.Errorf("%s: runtime/%s.json: %#v", p, a.Name, err)
			}
			checkCrossField(t, a.Name, b)
		}
	}
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkCrossField applies the rules a JSON Schema cannot express that fleet-worker refuses
// to start without (the format's own Check, which the worker runs).
func checkCrossField(t *testing.T, class string, b []byte) {
	t.Helper()
	c, err := rc.Parse(class, b)
	if err != nil {
		t.Error(err)
		return
	}
	// The compiler also promises a group field for every FIFO class.
	if c.Queue.FIFO && c.Queue.GroupBy == "" {
		t.Errorf("%s: fifo queue without group_by", class)
	}
}

func TestResearchFleetEKS(t *testing.T) {
	f := lower(t, "../../examples/research-fleet/fleet.yaml")
	a := f.Agent("researcher")
	b, err := Render(f, a)
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, b)
	q := m["queue"].(map[string]any)
	want := map[string]any{
		"name": "research-researcher.fifo", "dlq_name": "research-researcher-dlq.fifo",
		"fifo": true, "group_by": "conversation_id",
		"visibility_timeout_seconds": json.Number("900"), // 1.5 × 600 s step max
		"heartbeat_seconds":          json.Number("300"),
		"wait_time_seconds":          json.Number("20"),
		"max_messages":               json.Number("10"),
		"max_receives":               json.Number("3"), // defaults.queue.max_receives
	}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("queue = %v\nwant    %v", q, want)
	}
	if m["concurrency"] != json.Number("10") {
		t.Errorf("concurrency = %v, want scaling.per_replica 10", m["concurrency"])
	}
	retry := m["retry"].(map[string]any)
	if retry["max_attempts"] != json.Number("2") || retry["base_ms"] != json.Number("500") || retry["cap_ms"] != json.Number("30000") {
		t.Errorf("retry = %v", retry)
	}
	if got := m["step"]; !reflect.DeepEqual(got, map[string]any{"p95_seconds": json.Number("90"), "max_seconds": json.Number("600")}) {
		t.Errorf("step = %v", got)
	}
	idem := m["idempotency"].(map[string]any)
	if idem["table"] != "research-idempotency" || idem["window_seconds"] != json.Number("691200") || len(idem["key"].([]any)) != 0 {
		t.Errorf("idempotency = %v", idem)
	}
	if cc := m["claim_check"].(map[string]any); cc["bucket"] != "research-claimcheck-us-east-1" || cc["threshold_bytes"] != json.Number("65536") {
		t.Errorf("claim_check = %v", cc)
	}
	ev := m["events"].(map[string]any)
	if ev["bus"] != "research-fleet" || ev["bus_model"] != "classic" || ev["max_entries"] != json.Number("10") {
		t.Errorf("events = %v", ev)
	}
	if emits := ev["emits"].([]any); len(emits) != 1 || emits[0].(map[string]any)["detail_type"] != "agent.step.completed" {
		t.Errorf("emits = %v", emits)
	}
	if tel := m["telemetry"].(map[string]any); tel["service_name"] != "research-researcher" || tel["metrics_addr"] != "" {
		t.Errorf("telemetry = %v", tel)
	}
	if h := m["handler"]; !reflect.DeepEqual(h, map[string]any{"type": "exec", "command": []any{"/app/researcher"}}) {
		t.Errorf("handler = %v", h)
	}

	// Fallback closure: haiku-then-sonnet → sonnet-overflow → haiku-global, all three carried.
	models := m["models"].(map[string]any)
	if models["policy"] != "claude-haiku-then-sonnet" {
		t.Errorf("policy = %v", models["policy"])
	}
	pols := models["policies"].(map[string]any)
	var names []string
	for n := range pols {
		names = append(names, n)
	}
	sort.Strings(names)
	if want := []string{"claude-haiku-then-sonnet", "haiku-global", "sonnet-overflow"}; !reflect.DeepEqual(names, want) {
		t.Errorf("policies = %v, want transitive closure %v", names, want)
	}
	so := pols["sonnet-overflow"].(map[string]any)
	wantSO := map[string]any{
		"targets": []any{"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"}, "fallbacks": []any{"haiku-global"},
		"retries": json.Number("1"), "timeout_seconds": json.Number("180"), "allowed_fails": json.Number("2"),
		"cooldown_seconds": json.Number("60"), "max_in_flight": json.Number("400"), "tokens_per_minute": json.Number("2000000"),
		// Every class reaching it may run scaling.max processes: Σ = 80, each enforcing 1/80.
		"processes": json.Number("80"),
	}
	if !reflect.DeepEqual(so, wantSO) {
		t.Errorf("sonnet-overflow = %v\nwant %v", so, wantSO)
	}
	if hg := pols["haiku-global"].(map[string]any); len(hg["fallbacks"].([]any)) != 0 {
		t.Errorf("haiku-global fallbacks = %v, want []", hg["fallbacks"])
	}

	// The coder's key and http handler.
	cb, err := Render(f, f.Agent("coder"))
	if err != nil {
		t.Fatal(err)
	}
	cm := decode(t, cb)
	if k := cm["idempotency"].(map[string]any)["key"]; !reflect.DeepEqual(k, []any{"trace_id", "step"}) {
		t.Errorf("coder key = %v", k)
	}
	if h := cm["handler"]; !reflect.DeepEqual(h, map[string]any{"type": "http", "url": "http://127.0.0.1:8080/step"}) {
		t.Errorf("coder handler = %v", h)
	}
	if cm["concurrency"] != json.Number("4") {
		t.Errorf("coder concurrency = %v", cm["concurrency"])
	}
}

func TestLambdaClass(t *testing.T) {
	for _, tc := range []struct{ example, class, groupBy string }{
		{"async-tools", "cdk-synth", ""},
		{"minimal", "greeter", ""},
	} {
		f := lower(t, "../../examples/"+tc.example+"/fleet.yaml")
		c, err := Build(f, f.Agent(tc.class))
		if err != nil {
			t.Fatal(err)
		}
		if c.Runtime != "lambda" || c.Queue.HeartbeatSeconds != 0 {
			t.Errorf("%s: runtime %s heartbeat %d, want lambda with heartbeat 0", tc.class, c.Runtime, c.Queue.HeartbeatSeconds)
		}
		if c.Queue.FIFO || c.Queue.GroupBy != "" {
			t.Errorf("%s: standard queue got fifo=%v group_by=%q", tc.class, c.Queue.FIFO, c.Queue.GroupBy)
		}
		if c.Concurrency != 1 || c.Queue.MaxMessages != 1 {
			t.Errorf("%s: concurrency %d, max_messages %d; want the ESM batch size 1", tc.class, c.Concurrency, c.Queue.MaxMessages)
		}
		if c.Models.Policy != "" || len(c.Models.Policies) != 0 {
			t.Errorf("%s: model-less class got %+v", tc.class, c.Models)
		}
	}
	f := lower(t, "../../examples/minimal/fleet.yaml")
	c, _ := Build(f, f.Agent("greeter"))
	// 30 s step → 30 s function timeout → 180 s visibility; max_receives defaults to 3 (more warns: Q005); the worker gives up one receive earlier.
	if c.Queue.VisibilityTimeoutSeconds != 180 || c.Retry.MaxAttempts != 2 || c.Queue.MaxReceives != 3 {
		t.Errorf("greeter queue = %+v retry = %+v", c.Queue, c.Retry)
	}
	if c.Events.Emits == nil || len(c.Events.Emits) != 0 {
		t.Errorf("emits = %#v, want empty non-nil", c.Events.Emits)
	}
}

const llmFleet = `version: 1
fleet: llmf
region: eu-central-1
bus: { name: b, model: v2 }
events:
  q: { version: 1, source: s, detail: { type: object } }
models:
  a: { targets: [bedrock/x], fallbacks: [b] }
  b: { targets: [bedrock/y], fallbacks: [a] }
  c: { targets: [bedrock/z] }
agents:
  big-batch:
    runtime: lambda
    consumes: { event: q }
    step: { p95: 1s, max: 10s }
    handler: { llm: { system: "prompts/x.md" } }
    model: a
    lambda: { batch_size: 50 }
  ac:
    runtime: agentcore
    consumes: { event: q }
    step: { p95: 1m, max: 2h }
    handler: { http: "http://127.0.0.1:9000/step?a=1&b=2" }
    scaling: { min: 0, max: 3, per_replica: 2 }
`

func TestLLMHandlerCyclesAndBatch(t *testing.T) {
	f := lowerSrc(t, llmFleet)
	sch := compileSchema(t)
	files, ds := Generate(f)
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	for _, file := range files {
		if err := sch.Validate(decodeAny(t, file.Bytes)); err != nil {
			t.Errorf("%s: %#v", file.Path, err)
		}
	}
	b, _ := Render(f, f.Agent("big-batch"))
	m := decode(t, b)
	// Tools is required by the schema even when empty; max_tokens gets the default.
	want := map[string]any{"type": "llm", "system": "prompts/x.md", "tools": []any{}, "max_tokens": json.Number("4096")}
	if !reflect.DeepEqual(m["handler"], want) {
		t.Errorf("handler = %v", m["handler"])
	}
	// A cycle a → b → a yields each policy once; c is unreachable and left out.
	pols := m["models"].(map[string]any)["policies"].(map[string]any)
	if len(pols) != 2 || pols["a"] == nil || pols["b"] == nil {
		t.Errorf("policies = %v", pols)
	}
	// batch_size 50 runs 50 at once, but ReceiveMessage's 10 caps max_messages.
	if m["concurrency"] != json.Number("50") || m["queue"].(map[string]any)["max_messages"] != json.Number("10") {
		t.Errorf("concurrency %v, queue %v", m["concurrency"], m["queue"])
	}
	// bus.model v2 is refused (E017); the config describes the classic bus fleetc creates.
	if ev := m["events"].(map[string]any); ev["bus_model"] != "classic" || ev["max_entries"] != json.Number("10") {
		t.Errorf("events = %v", ev)
	}
	ab, _ := Render(f, f.Agent("ac"))
	if !bytes.Contains(ab, []byte(`"http://127.0.0.1:9000/step?a=1&b=2"`)) {
		t.Errorf("URL was escaped or altered:\n%s", ab)
	}
	am := decode(t, ab)
	if am["concurrency"] != json.Number("2") || am["queue"].(map[string]any)["heartbeat_seconds"] == json.Number("0") {
		t.Errorf("agentcore: concurrency %v queue %v", am["concurrency"], am["queue"])
	}
}

// TestFormat checks the byte-level contract: sorted keys at every level, two-space indent,
// one trailing newline, and identical bytes on every run.
func TestFormat(t *testing.T) {
	f := lower(t, "../../examples/research-fleet/fleet.yaml")
	for _, a := range f.Agents {
		b1, err := Render(f, a)
		if err != nil {
			t.Fatal(err)
		}
		b2, _ := Render(f, a)
		if !bytes.Equal(b1, b2) {
			t.Errorf("%s: output differs between runs", a.Name)
		}
		if !bytes.HasSuffix(b1, []byte("}\n")) || bytes.HasSuffix(b1, []byte("\n\n")) {
			t.Errorf("%s: want exactly one trailing newline", a.Name)
		}
		if !bytes.HasPrefix(b1, []byte("{\n  \"claim_check\": {\n    \"bucket\": ")) {
			t.Errorf("%s: want two-space indent with sorted keys first, got %.40q", a.Name, b1)
		}
		if errs := unsortedKeys(b1); len(errs) > 0 {
			t.Errorf("%s: %v", a.Name, errs)
		}
	}
	// The checker itself must catch a nested disorder.
	if errs := unsortedKeys([]byte(`{"a":{"z":1,"b":[{"y":1,"x":2}]},"c":2}`)); len(errs) != 2 {
		t.Errorf("unsortedKeys missed or over-reported: %v", errs)
	}
}

// unsortedKeys lists every object key that does not sort after its predecessor.
func unsortedKeys(b []byte) []string {
	var errs []string
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj  bool
		last string
		key  bool // next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: v == '{', key: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.obj && top.key {
				if v <= top.last && top.last != "" {
					errs = append(errs, fmt.Sprintf("key %q after %q", v, top.last))
				}
				top.last, top.key = v, false
				continue
			}
		}
		if top != nil && top.obj {
			top.key = true
		}
	}
	return errs
}

// TestCodes: Codes documents exactly the codes runtimeconfig.go emits, and G001 really fires.
func TestCodes(t *testing.T) {
	src, err := os.ReadFile("runtimeconfig.go")
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:Errorf|Warnf)\("([A-Z]+[0-9]+)"`).FindAllSubmatch(src, -1) {
		emitted[string(m[1])] = true
	}
	cs := Codes()
	if len(cs) != 1 || !emitted[cs[0].ID] || len(emitted) != 1 || cs[0].Severity != "error" || cs[0].Summary == "" || len(cs[0].Explain) < 80 {
		t.Errorf("Codes() = %+v, emitted %v", cs, emitted)
	}
	a := &ir.Agent{Name: "broken", Path: "/agents/broken", Handler: ir.Handler{Kind: "exec"}}
	files, ds := Generate(&ir.Fleet{Name: "x", Agents: []*ir.Agent{a}})
	if len(files) != 0 || len(ds) != 1 || ds[0].Code != cs[0].ID || ds[0].Severity != diag.Error {
		t.Errorf("exec without command: %d files, %v", len(files), ds)
	}
}

// An async tool class names the jobs table its worker keeps current; other classes do not.
func TestAsyncToolJobs(t *testing.T) {
	f := lower(t, "../../examples/async-tools/fleet.yaml")
	c, err := Build(f, f.Agent("cdk-synth"))
	if err != nil {
		t.Fatal(err)
	}
	want := &rc.Jobs{Table: f.State.JobsTable, IDField: "jobId", StatusPollAfterSeconds: 15}
	if f.State.JobsTable == "" || c.Jobs == nil || *c.Jobs != *want {
		t.Fatalf("jobs = %+v, want %+v", c.Jobs, want)
	}
	b, err := Render(f, f.Agent("cdk-synth"))
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, b)
	jobs, ok := m["jobs"].(map[string]any)
	if !ok || jobs["table"] != f.State.JobsTable || jobs["id_field"] != "jobId" || jobs["status_poll_after_seconds"] != json.Number("15") {
		t.Errorf("rendered jobs = %#v", m["jobs"])
	}
	if err := compileSchema(t).Validate(m); err != nil {
		t.Errorf("schema: %v", err)
	}
	g := lower(t, "../../examples/minimal/fleet.yaml")
	b, err = Render(g, g.Agent("greeter"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decode(t, b)["jobs"]; ok {
		t.Errorf("non-tool class emits jobs:\n%s", b)
	}
}

// No runtime config opens a metrics listener by itself: two classes run on one host (or one
// class twice) must not collide on a port, and nothing is exposed on all interfaces unless
// the deployment asks (the KEDA Deployment sets FLEET_METRICS_ADDR in its own pod network).
func TestNoMetricsListenerByDefault(t *testing.T) {
	for _, p := range examples(t) {
		f := lower(t, p)
		for _, a := range f.Agents {
			c, err := Build(f, a)
			if err != nil {
				t.Fatal(err)
			}
			if c.Telemetry.MetricsAddr != "" {
				t.Errorf("%s: class %s listens on %q by default", p, a.Name, c.Telemetry.MetricsAddr)
			}
		}
	}
}
