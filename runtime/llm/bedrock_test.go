package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/llm"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// The tool-use loop over Bedrock Converse (a fake that speaks its wire format): toolUse →
// the HTTP tool → toolResult → the final answer; and a model that never stops asking for
// tools is cut off at max_iterations.
func TestToolUseLoopOverBedrockConverse(t *testing.T) {
	var gotKey string
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("Idempotency-Key")
		w.Write([]byte(`{"weather":"sunny"}`))
	}))
	defer tool.Close()
	loop := func(always bool) (*rt.Server, *llm.Handler) {
		srv := rt.Bedrock(t, func(n int, req *router.Request) rt.Reply {
			last := req.Messages[len(req.Messages)-1].Content[0]
			if !always && last.ToolResult != nil {
				return rt.Reply{Text: "It is " + last.ToolResult.Content}
			}
			return rt.Reply{ToolUse: &router.ToolUse{ID: "tu-" + string(rune('0'+n)), Name: "weather", Input: json.RawMessage(`{"city":"Oslo"}`)}}
		})
		r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "bedrock/m", Model: "anthropic.claude", Provider: rt.BedrockProvider(srv)}},
			Timeout: 5 * time.Second, AllowedFails: 2, Cooldown: time.Minute}}, router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := llm.New(llm.Config{Policy: "p", System: "Be useful.", Tools: []string{"weather=" + tool.URL + "/weather"}, MaxIterations: 3}, r)
		if err != nil {
			t.Fatal(err)
		}
		return srv, h
	}
	srv, h := loop(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := h.Handle(ctx, handler.Request{Key: "step-7", TraceID: "run-3", Input: json.RawMessage(`"Weather in Oslo?"`)})
	if err != nil {
		t.Fatal(err)
	}
	var res llm.Result
	json.Unmarshal(out, &res)
	if res.Text != `It is {"weather":"sunny"}` || res.Iterations != 2 || srv.Calls() != 2 || res.Usage.InputTokens != 24 {
		t.Fatalf("result %s after %d calls", out, srv.Calls())
	}
	if want := llm.IdempotencyKey("run-3", "step-7", "weather", json.RawMessage(`{"city":"Oslo"}`)); gotKey != want {
		t.Fatalf("tool Idempotency-Key %q, want %q", gotKey, want)
	}
	second := srv.Requests()[1]
	if len(second.Messages) != 3 || second.Messages[1].Content[0].ToolUse == nil || second.Messages[2].Content[0].ToolResult == nil {
		t.Fatalf("the second Converse request does not replay toolUse and toolResult: %+v", second.Messages)
	}

	srv, h = loop(true)
	_, err = h.Handle(ctx, handler.Request{Key: "step-8", TraceID: "run-3", Input: json.RawMessage(`"loop"`)})
	var re *retry.Error
	if !errors.As(err, &re) || re.Code != llm.CodeMaxIterations || re.Retryable || srv.Calls() != 3 {
		t.Fatalf("err %v after %d calls: want LLMMaxIterations after 3", err, srv.Calls())
	}
}
