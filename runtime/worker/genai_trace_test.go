package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/jobstore"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/schemas/jobs"
)

// otlpCollector is an OTLP/HTTP trace receiver: it decodes each protobuf export request as
// the OTLP specification defines it and keeps the spans.
type otlpCollector struct {
	t     *testing.T
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		c.t.Errorf("OTLP export: %s %s (%s), want POST /v1/traces application/x-protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		c.t.Errorf("OTLP export body: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (c *otlpCollector) all() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}

func spanAttrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			out[kv.Key] = strconv.FormatBool(v.BoolValue)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, e := range v.ArrayValue.Values {
				parts = append(parts, e.GetStringValue())
			}
			out[kv.Key] = strings.Join(parts, ",")
		}
	}
	return out
}

// chatRequest is the part of an OpenAI chat completions request the model checks.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// An llm class that declares the fleet's async tools (tools: [async:cdk-synth]), with the
// handler tools and async_tools fleetc build wrote into examples/async-tools'
// release-assistant runtime config, runs in the real worker on kumo (queue, idempotency table, the jobs table as compiler/terraform declares
// it, a bus), with its spans exported over OTLP/HTTP to an httptest collector. The model is an
// httptest OpenAI-compatible chat completions server (answering as OpenAI documents tool
// calls) that asserts the exact tool definitions `fleetc tools` prints for the class.
//   - agent-ok: the model calls start_cdk_synth, the job is written QUEUED in the jobs table
//     as the class in the step's conversation, the model gets the tool's answer and finishes.
//     Spans: invoke_agent researcher → chat gpt-test ×2 and execute_tool start_cdk_synth
//     (with the model's tool-call id), a visibility extension on the way.
//   - agent-fail: every model call fails (503): each receive retries it in process through
//     its 2 s step window (fleet.retry events, action hold, kind failure, with the code and
//     delay), attempt 1 is then released (a fleet.retry event, action release), attempt 2
//     dead-lettered (fleet.dead_letter with the same wire code and reason the DLQ message
//     carries).
func TestAgentSpansAndAsyncToolsOnKumo(t *testing.T) {
	// Not parallel: it sets OTEL_EXPORTER_OTLP_ENDPOINT for the process, which otlptracehttp
	// reads itself (telemetry.OTLPExporter's getenv only decides whether to export).
	e := newEnv(t, envOpts{heartbeat: 1, maxAttempts: 2, maxReceives: 4, stepMax: 2})
	awsCfg := kumotest.Require(t)
	ctx := context.Background()

	// The llm class's handler tools and async tools, as fleetc build writes them into
	// examples/async-tools' release-assistant runtime config, on a jobs table and bus of
	// our own.
	raw, err := os.ReadFile("../../compiler/testdata/golden/async-tools/runtime/release-assistant.json")
	if err != nil {
		t.Fatal(err)
	}
	built, err := config.Parse("release-assistant.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	toolsCfg := built.AsyncTools
	if toolsCfg == nil || len(toolsCfg.Classes) != 1 || !slices.Equal(built.Handler.Tools, []string{"async:cdk-synth"}) {
		t.Fatalf("release-assistant's runtime config: tools %v, async_tools %+v; want async:cdk-synth and its tools", built.Handler.Tools, toolsCfg)
	}
	toolsCfg.Table = kumotest.JobsTable(t, awsCfg)
	toolsCfg.Bus = kumotest.Name(t, "bus")
	eb := awsconfig.EventBridge(awsCfg)
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(toolsCfg.Bus)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = eb.DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: aws.String(toolsCfg.Bus)})
	})
	defs, err := toolsCfg.Definitions()
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var toolAnswers []string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			t.Errorf("model request %s: not a chat completion", r.URL.Path)
		}
		if req.Model != "gpt-test" || len(req.Tools) != len(defs) {
			t.Errorf("model request: model %q, %d tools, want gpt-test and %d", req.Model, len(req.Tools), len(defs))
		}
		for i := range min(len(req.Tools), len(defs)) {
			got, want := req.Tools[i], defs[i]
			var params map[string]any
			b, _ := json.Marshal(want.InputSchema)
			json.Unmarshal(b, &params)
			if got.Type != "function" || got.Function.Name != want.Name || got.Function.Description != want.Description || !reflect.DeepEqual(got.Function.Parameters, params) {
				t.Errorf("tool %d in the request: %+v, want %s as `fleetc tools` defines it", i, got, want.Name)
			}
		}
		user, _ := req.Messages[1].Content.(string)
		w.Header().Set("Content-Type", "application/json")
		switch last := req.Messages[len(req.Messages)-1]; {
		case strings.Contains(user, "always503"):
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
		case last.Role == "tool":
			mu.Lock()
			toolAnswers = append(toolAnswers, last.Content.(string))
			mu.Unlock()
			if last.ToolCallID != "call-1" {
				t.Errorf("tool result answers %q, want call-1", last.ToolCallID)
			}
			w.Write([]byte(`{"id":"c2","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Started the synth; I will check back."},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39}}`))
		default:
			time.Sleep(1500 * time.Millisecond) // past the heartbeat: the visibility is extended
			w.Write([]byte(`{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call-1","type":"function","function":{"name":"start_cdk_synth","arguments":"{\"stackName\":\"web\",\"ref\":\"main\",\"schemaVersion\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":12,"total_tokens":32}}`))
		}
	}))
	defer model.Close()

	prompt := filepath.Join(t.TempDir(), "researcher.md")
	os.WriteFile(prompt, []byte("You are the researcher."), 0o644)
	e.cfg.Handler = config.Handler{Type: config.HandlerLLM, System: prompt, Tools: built.Handler.Tools, MaxTokens: 256, MaxIterations: 4}
	e.cfg.Models = config.Models{Policy: "fast", Policies: map[string]config.ModelPolicy{
		"fast": {Targets: []string{"openai/gpt-test"}, BaseURL: model.URL + "/v1", Fallbacks: []string{}, Retries: 1, TimeoutSeconds: 5,
			AllowedFails: 100, CooldownSeconds: 1, MaxInFlight: 4},
	}}
	e.cfg.AsyncTools = toolsCfg

	col := &otlpCollector{t: t}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	exp, err := telemetry.OTLPExporter(ctx, os.Getenv)
	if err != nil || exp == nil {
		t.Fatalf("OTLP exporter: %v", err)
	}
	tel, err := telemetry.New(telemetry.Options{ServiceName: "test-researcher", Class: "researcher", LogWriter: io.Discard, SpanExporter: exp, SyncExport: true})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := e.startWorkerWith(2*time.Second, tel)

	e.send(envelope("evt-agent-ok", stepSpec{TraceID: "agent-ok", ConversationID: "conv-7"}), "")
	e.send(envelope("evt-agent-fail", stepSpec{TraceID: "agent-fail", Behavior: "always503"}), "")
	var dead []dlqMessage
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline) && (e.record("agent-ok") != "done" || len(dead) == 0); {
		dead = append(dead, e.drainDLQ()...)
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if e.record("agent-ok") != "done" {
		t.Fatalf("agent-ok did not complete: %q", e.record("agent-ok"))
	}
	if len(dead) != 1 || dead[0].Key != "agent-fail" || dead[0].Attempts != "2" {
		t.Fatalf("DLQ %+v: want agent-fail after 2 attempts", dead)
	}

	// The job the model started: QUEUED, the class's, in the step's conversation.
	mu.Lock()
	if len(toolAnswers) != 1 {
		t.Fatalf("tool answers %v, want one", toolAnswers)
	}
	var ans struct {
		OK     bool   `json:"ok"`
		JobID  string `json:"jobId"`
		Status string `json:"status"`
	}
	json.Unmarshal([]byte(toolAnswers[0]), &ans)
	mu.Unlock()
	if !ans.OK || ans.Status != string(jobs.Queued) {
		t.Fatalf("start_cdk_synth answered %s", toolAnswers[0])
	}
	job, err := (&jobstore.Store{API: e.ddb, Table: toolsCfg.Table}).Get(ctx, ans.JobID)
	if err != nil || job == nil {
		t.Fatalf("job %s: %v %v", ans.JobID, job, err)
	}
	if job.PrincipalID != jobs.ClassPrincipal("researcher") || job.SessionID != "conv-7" || job.Status != jobs.Queued {
		t.Errorf("job record %+v: want principal class:researcher, session conv-7, QUEUED", job)
	}

	// The spans.
	spans := col.all()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[string(s.SpanId)] = s
	}
	agents := map[string][]*tracepb.Span{} // fleet.trace_id → invoke_agent spans, by attempt
	for _, s := range spans {
		if s.Name == "invoke_agent researcher" {
			a := spanAttrs(s.Attributes)
			agents[a["fleet.trace_id"]] = append(agents[a["fleet.trace_id"]], s)
		}
	}
	ok := agents["agent-ok"]
	if len(ok) != 1 {
		t.Fatalf("%d invoke_agent spans for agent-ok, want 1; spans: %v", len(ok), names(spans))
	}
	a := spanAttrs(ok[0].Attributes)
	for k, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher", "gen_ai.conversation.id": "conv-7"} {
		if a[k] != v {
			t.Errorf("invoke_agent %s = %q, want %q", k, a[k], v)
		}
	}
	if !hasEvent(ok[0], telemetry.EventVisibilityExtended) {
		t.Errorf("agent-ok's span has no %s event: %v", telemetry.EventVisibilityExtended, eventNames(ok[0]))
	}
	children := map[string][]map[string]string{}
	for _, s := range spans {
		if p := byID[string(s.ParentSpanId)]; p == ok[0] {
			children[s.Name] = append(children[s.Name], spanAttrs(s.Attributes))
		}
	}
	if len(children["chat gpt-test"]) != 2 || len(children["execute_tool start_cdk_synth"]) != 1 {
		t.Fatalf("children of agent-ok's invoke_agent: %v, want 2 chat gpt-test and 1 execute_tool start_cdk_synth", children)
	}
	for k, v := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "start_cdk_synth", "gen_ai.tool.call.id": "call-1", "gen_ai.tool.type": "function"} {
		if got := children["execute_tool start_cdk_synth"][0][k]; got != v {
			t.Errorf("execute_tool %s = %q, want %q", k, got, v)
		}
	}
	for _, c := range children["chat gpt-test"] {
		if c["gen_ai.operation.name"] != "chat" || c["gen_ai.request.model"] != "gpt-test" || c["gen_ai.usage.input_tokens"] == "" {
			t.Errorf("chat span %v", c)
		}
	}

	fail := agents["agent-fail"]
	if len(fail) != 2 {
		t.Fatalf("%d invoke_agent spans for agent-fail, want 2 (attempts)", len(fail))
	}
	if spanAttrs(fail[0].Attributes)["fleet.attempt"] != "1" {
		fail[0], fail[1] = fail[1], fail[0]
	}
	hold, ok0 := eventWith(fail[0], telemetry.EventRetry, telemetry.AttrAction, telemetry.ActionHold)
	if !ok0 || hold[telemetry.AttrRetryKind] != string(telemetry.RetryFailure) || hold["fleet.error.code"] == "" || hold["fleet.retry.delay_ms"] == "" {
		t.Errorf("attempt 1: in-receive retry event %v (events %v)", hold, eventNames(fail[0]))
	}
	retry, ok1 := eventWith(fail[0], telemetry.EventRetry, telemetry.AttrAction, "release")
	if !ok1 || retry["fleet.error.code"] == "" || retry["fleet.retry.delay_ms"] == "" {
		t.Errorf("attempt 1: retry event %v (events %v)", retry, eventNames(fail[0]))
	}
	dl, ok2 := event(fail[1], telemetry.EventDeadLetter)
	if !ok2 || dl["fleet.error.code"] != dead[0].Code || dl["fleet.error.message"] != dead[0].Message || dl["fleet.attempt"] != "2" {
		t.Errorf("attempt 2: dead-letter event %v, want code %q and reason %q", dl, dead[0].Code, dead[0].Message)
	}
	if dead[0].Code == string(wire.MalformedMessage) {
		t.Errorf("dead letter code %s", dead[0].Code)
	}
	for _, s := range spans {
		if p := byID[string(s.ParentSpanId)]; p == fail[1] && s.Name != "chat gpt-test" {
			t.Errorf("agent-fail attempt 2 has child %s", s.Name)
		}
	}
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func eventNames(s *tracepb.Span) []string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Name)
	}
	return out
}

func hasEvent(s *tracepb.Span, name string) bool {
	_, ok := event(s, name)
	return ok
}

func event(s *tracepb.Span, name string) (map[string]string, bool) {
	return eventWith(s, name, "", "")
}

// eventWith is the span's first event called name whose attribute key is value ("" key: any).
func eventWith(s *tracepb.Span, name, key, value string) (map[string]string, bool) {
	for _, e := range s.Events {
		if a := spanAttrs(e.Attributes); e.Name == name && (key == "" || a[key] == value) {
			return a, true
		}
	}
	return nil, false
}
