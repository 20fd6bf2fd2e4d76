package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/llm"
	"github.com/fleetc/fleetc/runtime/router"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
	"github.com/fleetc/fleetc/runtime/worker"
)

// An llm class starts and runs through the real worker (kumo for SQS and DynamoDB):
// the model, a fake OpenAI-compatible server behind a hard-down Bedrock primary, asks
// for an HTTP tool, gets its answer and finishes; a step whose model call hits a
// spend-limit 429 is not retried and lands in the DLQ with code SpendLimit.
func TestLLMClassRunsAndSpendLimitDeadLetters(t *testing.T) {
	e := newEnv(t, envOpts{heartbeat: 1, maxAttempts: 3, maxReceives: 4})

	var mu sync.Mutex
	toolKeys := map[string][]string{} // trace id → Idempotency-Key headers seen
	tools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args struct{ Q string }
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &args)
		mu.Lock()
		toolKeys[args.Q] = append(toolKeys[args.Q], r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.Write([]byte(`{"answer":"forty-two"}`))
	}))
	defer tools.Close()

	prompt := filepath.Join(t.TempDir(), "researcher.md")
	os.WriteFile(prompt, []byte("You are the researcher."), 0o644)

	modelCalls := map[string]int{}
	model := rt.OpenAI(t, "", func(n int, req *router.Request) rt.Reply {
		if req.System != "You are the researcher." || len(req.Tools) != 1 || req.Tools[0].Name != "lookup" {
			t.Errorf("model request: system %q tools %+v", req.System, req.Tools)
		}
		in := req.Messages[0].Content[0].Text
		var spec stepSpec
		json.Unmarshal([]byte(in), &spec)
		mu.Lock()
		modelCalls[spec.TraceID]++
		mu.Unlock()
		if spec.Behavior == "spend" {
			return rt.Reply{Status: 429, ErrorCode: "insufficient_quota"}
		}
		last := req.Messages[len(req.Messages)-1].Content[0]
		if last.ToolResult != nil {
			return rt.Reply{Text: "the answer is " + last.ToolResult.Content}
		}
		return rt.Reply{ToolUse: &router.ToolUse{ID: "call-1", Name: "lookup", Input: json.RawMessage(`{"q":"` + spec.TraceID + `"}`)}}
	})
	down := rt.Bedrock(t, rt.Always(rt.Reply{Status: 503, ErrorCode: "ServiceUnavailableException"}))

	e.cfg.Handler = config.Handler{Type: config.HandlerLLM, System: prompt, Tools: []string{"lookup=" + tools.URL + "/lookup"}, MaxTokens: 256, MaxIterations: 4}
	e.cfg.Models = config.Models{Policy: "fast", Policies: map[string]config.ModelPolicy{
		"fast": {Targets: []string{"bedrock/us.anthropic.claude-haiku-4-5"}, Fallbacks: []string{"overflow"}, Retries: 1, TimeoutSeconds: 5, AllowedFails: 2, CooldownSeconds: 60, MaxInFlight: 4},
		"overflow": {Targets: []string{"openai/gpt-test"}, BaseURL: model.URL + "/v1", Fallbacks: []string{}, Retries: 1, TimeoutSeconds: 5,
			AllowedFails: 2, CooldownSeconds: 60, MaxInFlight: 4},
	}}
	getenv := func(k string) string {
		if k == config.EnvBedrockEndpoint {
			return down.URL
		}
		return e.getenv(k)
	}

	e.send(envelope("evt-llm-1", stepSpec{TraceID: "llm-ok-1"}), "")
	e.send(envelope("evt-llm-2", stepSpec{TraceID: "llm-ok-2"}), "")
	e.send(envelope("evt-llm-3", stepSpec{TraceID: "llm-spend", Behavior: "spend"}), "")
	cfg := *e.cfg
	w, err := worker.Build(context.Background(), &cfg, worker.BuildOptions{
		Getenv: getenv, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AWSOptions: awsconfig.Options{Endpoint: kumotest.Endpoint, Region: kumotest.Region, Counter: e.counter,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.Models == nil {
		t.Fatal("an llm class built no model router")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.RunPoll(ctx, 5*time.Second); w.Close(context.Background()) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(30 * time.Second)
	var dead []dlqMessage
	for {
		dead = append(dead, e.drainDLQ()...)
		if (e.record("llm-ok-1") == "done" && e.record("llm-ok-2") == "done" && len(dead) >= 1) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if e.record("llm-ok-1") != "done" || e.record("llm-ok-2") != "done" {
		t.Fatalf("llm steps did not complete: %q %q", e.record("llm-ok-1"), e.record("llm-ok-2"))
	}
	if len(dead) != 1 || dead[0].Key != "llm-spend" || dead[0].Code != "SpendLimit" || !strings.Contains(dead[0].Message, "429") {
		t.Fatalf("DLQ %+v: want llm-spend with SpendLimit", dead)
	}
	mu.Lock()
	defer mu.Unlock()
	if modelCalls["llm-spend"] != 1 {
		t.Fatalf("the spend-limited step reached the model %d times, want 1", modelCalls["llm-spend"])
	}
	for _, k := range []string{"llm-ok-1", "llm-ok-2"} {
		want := llm.IdempotencyKey(k, k, "lookup", json.RawMessage(`{"q":"`+k+`"}`))
		if len(toolKeys[k]) != 1 || toolKeys[k][0] != want {
			t.Fatalf("tool calls for %s: %v, want one with key %s", k, toolKeys[k], want)
		}
		if modelCalls[k] != 2 {
			t.Fatalf("%s: %d model calls, want 2 (tool use, then the answer)", k, modelCalls[k])
		}
	}
}
