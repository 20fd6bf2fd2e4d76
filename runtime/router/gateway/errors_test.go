package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
	"github.com/fleetc/fleetc/runtime/router/openai"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Every row of the error table, produced by a real upstream answer through the listener,
// in both wire formats: status, OpenAI type and code, X-Amzn-ErrorType, x-should-retry, no
// Retry-After on a final row (when a retryable one carries it: TestGatewayTellsWhenToRetry).
func TestEveryErrorRowInBothWireFormats(t *testing.T) {
	cases := map[wire.Code]struct {
		reply    rt.Reply
		policy   string // the class policy the gateway serves ("" = p)
		deadline time.Duration
		stream   bool
	}{
		router.CodeSpendLimit:       {reply: rt.Reply{Status: 429, ErrorCode: "insufficient_quota"}},
		router.CodeContextWindow:    {reply: rt.Reply{Status: 400, Body: `{"error":{"message":"prompt is too long: 201234 tokens > 200000 maximum","type":"invalid_request_error"}}`}},
		router.CodeModelRejected:    {reply: rt.Reply{Status: 400, ErrorCode: "invalid_value"}},
		router.CodeUnknownPolicy:    {reply: rt.Reply{Text: "x"}, policy: "nope"},
		router.CodeStepDeadline:     {reply: rt.Reply{Text: "late", Delay: time.Second}, deadline: 150 * time.Millisecond},
		router.CodeModelUnavailable: {reply: rt.Reply{Status: 503, ErrorCode: "overloaded"}},
		router.CodeMidStream:        {reply: rt.Reply{Text: "half", FailAfter: 2}, stream: true},
	}
	if len(cases) != len(failures) {
		t.Fatalf("%d cases for %d rows of the error table", len(cases), len(failures))
	}
	for code, c := range cases {
		f := failures[code]
		srv := rt.OpenAI(t, "", rt.Always(c.reply))
		r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "p", Model: "m", Provider: rt.OpenAIProvider(srv, "")}},
			Retries: 0, Timeout: 5 * time.Second, AllowedFails: 100}}, router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pol := "p"
		if c.policy != "" {
			pol = c.policy
		}
		gw, err := Start(r, pol, "", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer gw.Close(context.Background())
		send := func(path, body string) *http.Response {
			req, _ := http.NewRequest(http.MethodPost, gw.URL()+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+gw.Token())
			if c.deadline > 0 {
				req.Header.Set(HeaderDeadline, time.Now().Add(c.deadline).Format(time.RFC3339Nano))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		retryAfter := func(h http.Header) bool { return h.Get("Retry-After") != "" }
		if c.stream {
			resp := send("/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"x"}]}`)
			r := openai.NewSSEReader(resp.Body)
			var last error
			for last == nil {
				_, last = r.Recv()
			}
			if !strings.Contains(last.Error(), f.code) && !strings.Contains(last.Error(), string(code)) {
				t.Errorf("%s: SSE stream ended with %v", code, last)
			}
			resp = send("/model/m/converse-stream", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`)
			er := bedrock.NewEventReader(resp.Body)
			for last = nil; last == nil; {
				_, last = er.Recv()
			}
			if !strings.Contains(last.Error(), f.bedrockType) {
				t.Errorf("%s: event stream ended with %v, want %s", code, last, f.bedrockType)
			}
			continue
		}
		resp := send("/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
		var eb openai.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != f.status || eb.Error.Type != f.openaiType || eb.Error.Code != f.code ||
			resp.Header.Get("X-Should-Retry") != map[bool]string{true: "false", false: "true"}[f.final] || f.final && retryAfter(resp.Header) {
			t.Errorf("%s, OpenAI shape: %d %q %q x-should-retry %q retry-after %q; want %d %q %q final %v",
				code, resp.StatusCode, eb.Error.Type, eb.Error.Code, resp.Header.Get("X-Should-Retry"), resp.Header.Get("Retry-After"), f.status, f.openaiType, f.code, f.final)
		}
		resp = send("/model/m/converse", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`)
		var msg struct{ Message string }
		json.NewDecoder(resp.Body).Decode(&msg)
		resp.Body.Close()
		if resp.StatusCode != f.bedrockStatus || resp.Header.Get("X-Amzn-ErrorType") != f.bedrockType || msg.Message == "" ||
			resp.Header.Get("X-Should-Retry") != map[bool]string{true: "false", false: "true"}[f.final] {
			t.Errorf("%s, Converse shape: %d %q %q; want %d %q", code, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), msg.Message, f.bedrockStatus, f.bedrockType)
		}
		if code == router.CodeContextWindow && !strings.HasPrefix(msg.Message, "Input is too long for requested model") {
			t.Errorf("context window, Converse shape: message %q does not start with Bedrock's wording", msg.Message)
		}
	}
}

// Every stop reason row, both ways: a Bedrock stop reason reaches an OpenAI client as
// its finish_reason (through the gateway), an OpenAI finish_reason reaches the router as
// its stop reason.
func TestEveryStopReasonRow(t *testing.T) {
	// docs/model-gateway.md's table, written out: the test does not read the mapping it checks.
	toFinish := map[string]string{"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
		"model_context_window_exceeded": "length", "guardrail_intervened": "content_filter", "content_filtered": "content_filter",
		"malformed_model_output": "stop", "malformed_tool_use": "stop"}
	toStop := map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use", "content_filter": "content_filtered"}
	if len(toFinish) != len(openai.StopToFinish) || len(toStop) != len(openai.FinishToStop) {
		t.Fatalf("the mapping has %d+%d rows, this test %d+%d", len(openai.StopToFinish), len(openai.FinishToStop), len(toFinish), len(toStop))
	}
	for stop, finish := range toFinish {
		srv := rt.Bedrock(t, rt.Always(rt.Reply{Text: "x", StopReason: stop}))
		r, _ := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "p", Model: "m", Provider: rt.BedrockProvider(srv)}}, Timeout: 5 * time.Second}}, router.Options{})
		gw := New(r, "p", time.Second)
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+gw.Token())
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, req)
		var cr openai.ChatResponse
		json.Unmarshal(rec.Body.Bytes(), &cr)
		if len(cr.Choices) != 1 || cr.Choices[0].FinishReason != finish {
			t.Errorf("Bedrock stopReason %s: finish_reason %+v, want %s", stop, cr.Choices, finish)
		}
	}
	for finish, stop := range toStop {
		cr := openai.ChatResponse{Choices: []openai.Choice{{FinishReason: finish, Message: openai.ChatMessage{Content: openai.TextContent("x")}}}}
		resp, err := cr.ToRouter()
		if err != nil || resp.StopReason != stop {
			t.Errorf("finish_reason %s: stop reason %q, want %s", finish, resp.StopReason, stop)
		}
	}
}
