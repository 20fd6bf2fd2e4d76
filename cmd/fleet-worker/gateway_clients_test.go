package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// clientsDir holds the npm clients tools/install.sh installs (gateway-clients).
const clientsDir = "../../tools/gateway-clients"

func needClients(t *testing.T) string {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(clientsDir, "node_modules", "openai"))
	}
	if err != nil {
		if os.Getenv("FLEETC_REQUIRE_TOOLS") == "1" {
			t.Fatalf("the gateway clients are required: bash tools/install.sh gateway-clients (%v)", err)
		}
		t.Skipf("gateway clients not installed (bash tools/install.sh gateway-clients): %v", err)
	}
	return node
}

// marker is a request's script: the text of its first user message.
func marker(req *router.Request) string {
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if m.Role == router.RoleUser && b.Text != "" {
				return b.Text
			}
		}
	}
	return ""
}

// scripted answers by marker and counts calls per marker.
type scripted struct {
	mu    sync.Mutex
	calls map[string]int
	reply func(m string, n int, req *router.Request) rt.Reply
}

func (s *scripted) script(_ int, req *router.Request) rt.Reply {
	m := marker(req)
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[m]++
	n := s.calls[m]
	s.mu.Unlock()
	return s.reply(m, n, req)
}

func (s *scripted) count(m string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[m] }

// logprobs is a chat completion's logprobs object as the API reference documents it.
const logprobs = `{"content":[{"token":"Hello","logprob":-0.31725305,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello","logprob":-0.31725305,"bytes":[72,101,108,108,111]}]},` +
	`{"token":"!","logprob":-0.02380986,"bytes":[33],"top_logprobs":[{"token":"!","logprob":-0.02380986,"bytes":[33]}]}],"refusal":null}`

// The SDKs handler authors use, run by Node against `fleet-worker gateway` in front of a
// scripted OpenAI-compatible upstream (policy gpt) and a scripted Bedrock (policy claude,
// gpt's fallback and context-window fallback): the openai SDK, the AI SDK and the AWS SDK
// for JavaScript's Bedrock Runtime client (HTTP/2, bearer token).
func TestSDKClientsAgainstFleetWorkerGateway(t *testing.T) {
	node := needClients(t)
	oa := &scripted{reply: func(m string, n int, req *router.Request) rt.Reply {
		usage := router.Usage{InputTokens: 12, OutputTokens: 5}
		switch m {
		case "tool":
			return rt.Reply{ToolUse: &router.ToolUse{ID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Oslo"}`)}, Usage: usage}
		case "json":
			return rt.Reply{Text: `{"city":"Oslo","temp":3}`, Usage: usage}
		case "spend":
			return rt.Reply{Status: 429, ErrorCode: "insufficient_quota", Message: "You exceeded your current quota"}
		case "ratelimit":
			return rt.Reply{Status: 429, Body: `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`}
		case "retryafter":
			if n == 1 {
				return rt.Reply{Status: 429, ErrorCode: "rate_limit_exceeded", RetryAfter: "1"}
			}
			return rt.Reply{Text: "after retry-after", Usage: usage}
		case "down":
			return rt.Reply{Status: 503, ErrorCode: "overloaded"}
		case "ctx-openai":
			return rt.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}
		case "ctx-vllm":
			return rt.Reply{Status: 400, Body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`}
		case "ctx-anthropic":
			return rt.Reply{Status: 400, Body: "{\"error\":{\"message\":\"input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000\",\"type\":\"invalid_request_error\"}}"}
		case "midfail":
			return rt.Reply{Text: "partial answer", FailAfter: 2}
		case "toolloop":
			last := req.Messages[len(req.Messages)-1].Content[0]
			if last.ToolResult != nil {
				return rt.Reply{Text: "the tool said " + last.ToolResult.Content, Usage: usage}
			}
			return rt.Reply{Text: "let me look", ToolUse: &router.ToolUse{ID: "call_w", Name: "get_weather", Input: json.RawMessage(`{"city":"Oslo"}`)}, Usage: usage}
		case "logprobs":
			return rt.Reply{Text: "Hello!", Logprobs: json.RawMessage(logprobs), SystemFingerprint: "fp_44709d6fcb", ServiceTier: "default",
				Usage: router.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 4, ReasoningTokens: 1,
					PromptDetails: `{"cached_tokens":4,"audio_tokens":0}`, CompletionDetails: `{"reasoning_tokens":1,"audio_tokens":0}`}}
		}
		return rt.Reply{Text: "hello from openai", Usage: usage}
	}}
	br := &scripted{reply: func(m string, n int, req *router.Request) rt.Reply {
		usage := router.Usage{InputTokens: 20, OutputTokens: 6}
		switch {
		case m == "tool":
			return rt.Reply{ToolUse: &router.ToolUse{ID: "tu_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Bergen"}`)}, Usage: usage}
		case m == "json":
			return rt.Reply{ToolUse: &router.ToolUse{ID: "tu_j", Name: "json_response", Input: json.RawMessage(`{"city":"Bergen","temp":5}`)}, Usage: usage}
		case m == "parallel":
			last := req.Messages[len(req.Messages)-1]
			if len(req.Messages) == 3 && len(last.Content) == 2 && last.Content[0].ToolResult != nil && last.Content[1].ToolResult != nil {
				return rt.Reply{Text: "two results in one message", Usage: usage}
			}
			return rt.Reply{Status: 400, ErrorCode: "ValidationException", Message: "A conversation must alternate between user and assistant roles."}
		case m == "throttle" && n == 1:
			return rt.Reply{Status: 429, ErrorCode: "ThrottlingException", Message: "Too many requests, please wait before trying again."}
		case m == "throttle":
			return rt.Reply{Text: "after throttling", Usage: usage}
		case strings.HasPrefix(m, "ctx-"):
			return rt.Reply{Text: "long context answer", Usage: usage}
		}
		return rt.Reply{Text: "hello from bedrock", Usage: usage}
	}}
	openaiUp := rt.OpenAI(t, "sk-upstream", oa.script)
	bedrockUp := rt.Bedrock(t, br.script)

	raw, err := os.ReadFile("../../runtime/config/testdata/researcher.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(raw, &cfg)
	pol := func(target string, extra map[string]any) map[string]any {
		p := map[string]any{"targets": []string{target}, "retries": 1, "timeout_seconds": 10, "allowed_fails": 100,
			"cooldown_seconds": 1, "max_in_flight": 16, "tokens_per_minute": 1000000, "fallbacks": []string{}}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	cfg["models"] = map[string]any{"policy": "gpt", "policies": map[string]any{
		"gpt": pol("openai/gpt-4o-mini", map[string]any{"base_url": openaiUp.URL + "/v1", "api_key_env": "UPSTREAM_KEY",
			"fallbacks": []string{"claude"}, "context_window_fallbacks": []string{"claude"}}),
		"claude": pol("bedrock/anthropic.claude-test", nil),
	}}
	path := filepath.Join(t.TempDir(), "researcher.json")
	b, _ := json.Marshal(cfg)
	os.WriteFile(path, b, 0o644)

	// The worker's own Bedrock client signs with these (the fake checks a SigV4 header).
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	env := map[string]string{"FLEET_BEDROCK_ENDPOINT": bedrockUp.URL, "UPSTREAM_KEY": "sk-upstream"}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := Main(ctx, []string{"gateway", "--config", path}, func(k string) string { return env[k] }, pw, &stderr)
		pw.Close()
		exited <- code
	}()
	defer func() {
		cancel()
		if code := <-exited; code != exitOK {
			t.Errorf("fleet-worker gateway exited %d: %s", code, stderr.String())
		}
	}()
	exports := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(exports) < 7 && sc.Scan() {
		kv, ok := strings.CutPrefix(sc.Text(), "export ")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 {
			t.Fatalf("unexpected output line %q", sc.Text())
		}
		exports[k] = v
	}
	go io.Copy(io.Discard, pr)
	if exports["OPENAI_API_KEY"] == "" || exports["OPENAI_API_KEY"] != exports["FLEET_MODEL_GATEWAY_TOKEN"] || !strings.HasPrefix(exports["OPENAI_BASE_URL"], "http://127.0.0.1:") {
		t.Fatalf("exports %v (stderr %s)", exports, stderr.String())
	}

	cmd := exec.Command(node, "run.mjs")
	cmd.Dir = clientsDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_EC2_METADATA_DISABLED=true"}
	for k, v := range exports {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var nodeErr bytes.Buffer
	cmd.Stderr = &nodeErr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node run.mjs: %v\n%s", err, nodeErr.String())
	}
	t.Logf("node clients ran in %v", time.Since(start).Round(time.Millisecond))
	var got map[string]map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	str := func(c, path string) string {
		var v any = got[c]
		for _, k := range strings.Split(path, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		switch x := v.(type) {
		case string:
			return x
		case nil:
			return ""
		default:
			b, _ := json.Marshal(x)
			return string(b)
		}
	}
	want := func(c, path, value string) {
		t.Helper()
		if g := str(c, path); g != value {
			t.Errorf("%s: %s = %s, want %s (case: %s)", c, path, g, value, str(c, ""))
		}
	}
	for c := range got {
		if str(c, "unexpected") == "true" {
			t.Errorf("%s failed: %s", c, str(c, "error"))
		}
	}
	// openai SDK
	want("oa_plain", "text", "hello from openai")
	want("oa_plain", "finish", "stop")
	want("oa_plain", "usage.total_tokens", "17")
	want("oa_stream", "text", "hello from openai")
	want("oa_stream", "usage.completion_tokens", "5")
	want("oa_tools", "tool", "get_weather")
	want("oa_tools", "args", `{"city":"Oslo"}`)
	want("oa_tools", "finish", "tool_calls")
	want("oa_stream_tools", "args", `{"city":"Oslo"}`)
	want("oa_stream_tools", "finish", "tool_calls")
	want("oa_json", "object", `{"city":"Oslo","temp":3}`)
	want("oa_parallel_tool_results", "text", "two results in one message")
	want("oa_stream_midfail", "text", "partial")
	if !strings.Contains(str("oa_stream_midfail", "error.message"), "ModelStreamInterrupted") {
		t.Errorf("oa_stream_midfail: %s, want the stream's error event raised", str("oa_stream_midfail", ""))
	}
	want("oa_spend", "error.status", "429")
	want("oa_spend", "error.code", "insufficient_quota")
	want("oa_ratelimit", "text", "hello from bedrock")
	want("oa_retryafter", "text", "after retry-after")
	want("oa_down", "text", "hello from bedrock")
	for _, c := range []string{"ctx-openai", "ctx-vllm", "ctx-anthropic"} {
		want("oa_"+c, "text", "long context answer")
		if oa.count(c) != 1 {
			t.Errorf("%s: upstream called %d times, want 1 (a context-window error is not retried)", c, oa.count(c))
		}
	}
	// x-should-retry: false (openai SDK) and a 400 ServiceQuotaExceededException (AWS SDK)
	// kept either client from repeating the final answer: one upstream call each.
	if n := oa.count("spend"); n != 2 {
		t.Errorf("spend limit: upstream called %d times by 2 clients, want 2", n)
	}
	if n := oa.count("ratelimit"); n != 2 {
		t.Errorf("rate limit without Retry-After: upstream called %d times, want 2 (then the fallback)", n)
	}
	// AI SDK
	want("ai_generateText", "text", "hello from openai")
	want("ai_generateText", "finish", "stop")
	want("ai_streamText", "text", "hello from openai")
	want("ai_streamText", "usage.outputTokens", "5")
	want("ai_generateObject", "object", `{"city":"Oslo","temp":3}`)
	want("ai_generateObject_bedrock", "object", `{"city":"Bergen","temp":5}`)
	// The Responses API: translated to chat completions (gpt) and to Converse (claude).
	for _, c := range []struct{ policy, text, args, model string }{
		{"gpt", "hello from openai", `{"city":"Oslo"}`, "gpt-4o-mini"},
		{"claude", "hello from bedrock", `{"city":"Bergen"}`, "anthropic.claude-test"},
	} {
		m := c.policy
		want("oa_responses_"+m, "text", c.text)
		want("oa_responses_"+m, "status", "completed")
		want("oa_responses_"+m, "object", "response")
		want("oa_responses_"+m, "store", "false")
		want("oa_responses_"+m, "model", c.model)
		want("oa_responses_stream_"+m, "text", c.text)
		want("oa_responses_stream_"+m, "model", c.model)
		want("oa_responses_stream_"+m, "status", "completed")
		want("oa_responses_stream_"+m, "first", "response.created")
		want("oa_responses_stream_"+m, "last", "response.completed")
		want("oa_responses_stream_"+m, "inOrder", "true")
		want("oa_responses_stream_"+m, "types", "response.created,response.in_progress,response.output_item.added,response.content_part.added,"+
			"response.output_text.delta,response.output_text.done,response.content_part.done,response.output_item.done,response.completed")
		want("oa_responses_stream_"+m, "output", "message")
		want("oa_responses_tools_"+m, "tool", "get_weather")
		want("oa_responses_tools_"+m, "args", c.args)
		want("oa_responses_stream_tools_"+m, "args", c.args)
		want("oa_responses_stream_tools_"+m, "output", "function_call")
		want("oa_responses_stream_tools_"+m, "types", "response.created,response.in_progress,response.output_item.added,"+
			"response.function_call_arguments.delta,response.function_call_arguments.done,response.output_item.done,response.completed")
		want("oa_responses_json_"+m, "object", strings.Replace(c.args, "}", `,"temp":`+map[string]string{"gpt": "3", "claude": "5"}[m]+"}", 1))
	}
	want("oa_responses_gpt", "usage.total_tokens", "17")
	want("oa_responses_gpt", "usage.input_tokens_details.cached_tokens", "0")
	want("oa_responses_stream_claude", "usage.output_tokens", "6")
	want("oa_responses_tool_result", "text", "two results in one message")
	want("oa_responses_stream_helper", "text", "hello from openai")
	want("oa_responses_stream_helper", "args", `{"city":"Bergen"}`)
	want("oa_responses_parse", "object", `{"city":"Bergen","temp":5}`)
	want("oa_responses_previous", "error.status", "400")
	if !strings.Contains(str("oa_responses_previous", "error.message"), "previous_response_id") {
		t.Errorf("oa_responses_previous: %s, want a 400 naming previous_response_id", str("oa_responses_previous", ""))
	}
	want("oa_responses_store", "error.status", "400")
	want("oa_responses_stream_midfail", "text", "partial")
	if !strings.Contains(str("oa_responses_stream_midfail", "error.message"), "ModelStreamInterrupted") {
		t.Errorf("oa_responses_stream_midfail: %s, want the stream's error event raised", str("oa_responses_stream_midfail", ""))
	}
	want("ai_responses_generateText", "text", "hello from openai")
	want("ai_responses_generateText", "finish", "stop")
	want("ai_responses_generateText", "usage.outputTokens", "5")
	want("ai_responses_generateText", "modelId", "gpt-4o-mini")
	want("ai_responses_streamText", "text", "hello from openai")
	want("ai_responses_streamText", "finish", "stop")
	want("ai_responses_streamText", "usage.inputTokens", "12")
	want("ai_responses_streamText_bedrock", "text", "hello from bedrock")
	want("ai_responses_streamText_bedrock", "usage.totalTokens", "26")
	want("ai_responses_generateObject", "object", `{"city":"Oslo","temp":3}`)
	want("ai_responses_tools", "tool", "get_weather")
	want("ai_responses_tools", "args", `{"city":"Oslo"}`)
	want("ai_responses_tools", "finish", "tool-calls")
	want("ai_responses_tool_loop", "text", "the tool said 3C in Oslo")
	want("ai_responses_tool_loop", "steps", "2")
	want("ai_responses_tool_loop_stored", "error.status", "400")
	if !strings.Contains(str("ai_responses_tool_loop_stored", "error.message"), "store = false") {
		t.Errorf("ai_responses_tool_loop_stored: %s, want the 400 telling to set store = false", str("ai_responses_tool_loop_stored", "error.message"))
	}
	// Answer fields besides the message, as the SDKs expose them.
	want("oa_logprobs", "tokens", "Hello|!")
	want("oa_logprobs", "fingerprint", "fp_44709d6fcb")
	want("oa_logprobs", "tier", "default")
	want("oa_logprobs", "usage.prompt_tokens_details", `{"audio_tokens":0,"cached_tokens":4}`)
	want("oa_logprobs", "usage.completion_tokens_details", `{"audio_tokens":0,"reasoning_tokens":1}`)
	want("oa_stream_logprobs", "tokens", "Hello|!")
	want("oa_stream_logprobs", "models", "gpt-4o-mini")
	want("oa_stream_logprobs", "fingerprints", "fp_44709d6fcb")
	want("oa_stream_logprobs", "usage.completion_tokens_details", `{"audio_tokens":0,"reasoning_tokens":1}`)
	want("oa_responses_logprobs", "tokens", "Hello|!")
	want("oa_responses_logprobs", "tier", "default")
	want("oa_responses_logprobs", "usage.input_tokens_details.cached_tokens", "4")
	want("oa_responses_logprobs", "usage.output_tokens_details.reasoning_tokens", "1")
	want("ai_responses_logprobs", "tokens", "Hello|!")
	want("ai_responses_logprobs", "tier", "default")
	want("ai_responses_logprobs", "usage.reasoningTokens", "1")
	want("ai_responses_logprobs", "usage.cachedInputTokens", "4")
	want("ai_responses_stream_logprobs", "tokens", "Hello|!")
	want("ai_responses_stream_logprobs", "tier", "default")
	// AWS SDK for JavaScript, Bedrock Runtime
	want("br_converse_claude", "text", "hello from bedrock")
	want("br_converse_gpt", "text", "hello from openai")
	want("br_converse_gpt", "stop", "end_turn")
	want("br_converse_claude", "usage.totalTokens", "26")
	for _, m := range []string{"claude", "gpt"} {
		want("br_stream_"+m, "stop", "end_turn")
		want("br_stream_tools_"+m, "tool", "get_weather")
		want("br_stream_tools_"+m, "stop", "tool_use")
	}
	want("br_stream_claude", "text", "hello from bedrock")
	want("br_stream_gpt", "text", "hello from openai")
	want("br_stream_gpt", "usage.inputTokens", "12")
	want("br_stream_tools_claude", "toolInput", `{"city":"Bergen"}`)
	want("br_stream_tools_gpt", "toolInput", `{"city":"Oslo"}`)
	want("br_spend", "error.name", "ServiceQuotaExceededException")
	want("br_spend", "error.status", "400")
	want("br_spend", "error.attempts", "1")
	want("br_throttle", "text", "after throttling")
	want("br_stream_midfail", "error.name", "ModelStreamErrorException")
}
