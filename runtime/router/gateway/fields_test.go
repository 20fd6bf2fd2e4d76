package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/openai"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// The answer fields an OpenAI-compatible target returns besides the message, in the
// shapes the chat-completions API reference documents: the choice's logprobs, the
// system_fingerprint and service_tier, and the usage's details objects.
const (
	answeringModel = "gpt-4o-mini-2024-07-18"
	fingerprint    = "fp_44709d6fcb"
	tokenHello     = `{"token":"Hello","logprob":-0.31725305,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello","logprob":-0.31725305,"bytes":[72,101,108,108,111]}]}`
	tokenBang      = `{"token":"!","logprob":-0.02380986,"bytes":[33],"top_logprobs":[{"token":"!","logprob":-0.02380986,"bytes":[33]}]}`
	promptDetails  = `{"cached_tokens":4,"audio_tokens":0}`
	outputDetails  = `{"reasoning_tokens":1,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}`
	wholeAnswer    = `{"id":"chatcmpl-123","object":"chat.completion","created":1702685778,"model":"` + answeringModel + `",
 "system_fingerprint":"` + fingerprint + `","service_tier":"default",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},
   "logprobs":{"content":[` + tokenHello + `,` + tokenBang + `],"refusal":null},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":` + promptDetails + `,"completion_tokens_details":` + outputDetails + `}}`
)

// streamedAnswer is the same answer streamed: every chunk names the model, fingerprint and
// tier; each content chunk carries its token's logprobs; the usage chunk comes last.
func streamedAnswer() string {
	chunk := func(choices string) string {
		return `data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1702685778,"model":"` + answeringModel +
			`","system_fingerprint":"` + fingerprint + `","service_tier":"default","choices":` + choices + "}\n\n"
	}
	return chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`) +
		chunk(`[{"index":0,"delta":{"content":"Hello"},"logprobs":{"content":[`+tokenHello+`],"refusal":null},"finish_reason":null}]`) +
		chunk(`[{"index":0,"delta":{"content":"!"},"logprobs":{"content":[`+tokenBang+`],"refusal":null},"finish_reason":null}]`) +
		chunk(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]`) +
		`data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1702685778,"model":"` + answeringModel +
		`","system_fingerprint":"` + fingerprint + `","service_tier":"default","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":` +
		promptDetails + `,"completion_tokens_details":` + outputDetails + "}}\n\ndata: [DONE]\n\n"
}

// fieldsUpstream is an OpenAI-compatible target answering with every field above, whole
// or streamed as asked; it keeps the request bodies it got.
func fieldsUpstream(t *testing.T) (*gateway.Gateway, func() []map[string]any) {
	var mu sync.Mutex
	var bodies []map[string]any
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("upstream: %s %v", r.URL.Path, err)
		}
		mu.Lock()
		bodies = append(bodies, req)
		mu.Unlock()
		if req["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, streamedAnswer())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, wholeAnswer)
	}))
	t.Cleanup(up.Close)
	r, err := router.New([]router.Policy{{Name: "fast", Deployments: []router.Deployment{{Name: "openai/gpt-4o-mini", Model: "gpt-4o-mini",
		Provider: &openai.Client{BaseURL: up.URL + "/v1"}}}, Timeout: 5 * time.Second}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(r, "fast", "127.0.0.1:0", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	return gw, func() []map[string]any { mu.Lock(); defer mu.Unlock(); return bodies }
}

// sameJSON says whether two JSON texts are the same value.
func sameJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	var g, w any
	b, _ := json.Marshal(got)
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	json.Unmarshal(b, &g)
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

// events reads a server-sent event stream's data lines as JSON objects.
func events(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// Every field the target answered with reaches a chat-completions client, whole and
// streamed: logprobs, system_fingerprint, service_tier and both usage details objects;
// every chunk names the model that answered, and streams carry the X-Fleet-Model-* headers
// like whole answers. Checked on the raw HTTP (the openai SDKs hand these fields over as
// they parse them).
func TestEveryAnswerFieldReachesTheChatClient(t *testing.T) {
	gw, _ := fieldsUpstream(t)
	resp, err := post(gw, "/v1/chat/completions", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":1}`)
	if err != nil {
		t.Fatal(err)
	}
	var whole map[string]any
	json.NewDecoder(resp.Body).Decode(&whole)
	resp.Body.Close()
	var up map[string]any
	json.Unmarshal([]byte(wholeAnswer), &up)
	for _, k := range []string{"model", "system_fingerprint", "service_tier"} {
		if whole[k] != up[k] {
			t.Errorf("whole answer: %s = %v, want %v", k, whole[k], up[k])
		}
	}
	choice, _ := whole["choices"].([]any)[0].(map[string]any)
	if !sameJSON(t, choice["logprobs"], `{"content":[`+tokenHello+`,`+tokenBang+`],"refusal":null}`) {
		t.Errorf("whole answer: logprobs %v", choice["logprobs"])
	}
	usage, _ := whole["usage"].(map[string]any)
	if !sameJSON(t, usage["prompt_tokens_details"], promptDetails) || !sameJSON(t, usage["completion_tokens_details"], outputDetails) {
		t.Errorf("whole answer: usage %v", usage)
	}

	resp, err = post(gw, "/v1/chat/completions", `{"model":"fast","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":1,"stream":true,"stream_options":{"include_usage":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	if p, d := resp.Header.Get("X-Fleet-Model-Policy"), resp.Header.Get("X-Fleet-Model-Deployment"); p != "fast" || d != "openai/gpt-4o-mini" {
		t.Errorf("stream headers: X-Fleet-Model-Policy %q, X-Fleet-Model-Deployment %q", p, d)
	}
	var tokens []any
	var streamedUsage map[string]any
	chunks := events(t, resp)
	for _, c := range chunks {
		if c["model"] != answeringModel || c["system_fingerprint"] != fingerprint || c["service_tier"] != "default" {
			t.Errorf("chunk names model %v, fingerprint %v, tier %v", c["model"], c["system_fingerprint"], c["service_tier"])
		}
		for _, ch := range c["choices"].([]any) {
			if lp, ok := ch.(map[string]any)["logprobs"].(map[string]any); ok {
				tokens = append(tokens, lp["content"].([]any)...)
			}
		}
		if u, ok := c["usage"].(map[string]any); ok {
			streamedUsage = u
		}
	}
	if !sameJSON(t, tokens, `[`+tokenHello+`,`+tokenBang+`]`) {
		t.Errorf("streamed logprobs %v", tokens)
	}
	if !sameJSON(t, streamedUsage["prompt_tokens_details"], promptDetails) || !sameJSON(t, streamedUsage["completion_tokens_details"], outputDetails) {
		t.Errorf("streamed usage %v", streamedUsage)
	}
	if len(chunks) < 4 {
		t.Errorf("%d chunks", len(chunks))
	}
}

// The same fields reach a Responses API client in that API's shapes: the output text's
// logprobs (asked for with include), usage details (cached and reasoning tokens) and the
// service tier, whole and streamed; the target was asked for logprobs.
func TestEveryAnswerFieldReachesTheResponsesClient(t *testing.T) {
	gw, bodies := fieldsUpstream(t)
	const ask = `{"model":"fast","input":"hi","include":["message.output_text.logprobs"],"top_logprobs":1`
	resp, err := post(gw, "/v1/responses", ask+`}`)
	if err != nil {
		t.Fatal(err)
	}
	var whole map[string]any
	json.NewDecoder(resp.Body).Decode(&whole)
	resp.Body.Close()
	if up := bodies()[0]; up["logprobs"] != true || up["top_logprobs"] != 1.0 {
		t.Errorf("the target was asked %v, want logprobs: true, top_logprobs: 1", up)
	}
	if whole["model"] != answeringModel || whole["service_tier"] != "default" || whole["status"] != "completed" {
		t.Errorf("response: model %v, service_tier %v, status %v", whole["model"], whole["service_tier"], whole["status"])
	}
	if !sameJSON(t, whole["usage"], `{"input_tokens":9,"input_tokens_details":{"cached_tokens":4},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":11}`) {
		t.Errorf("response usage %v", whole["usage"])
	}
	out, _ := whole["output"].([]any)
	if len(out) != 1 {
		t.Fatalf("response output %v", whole["output"])
	}
	part := out[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	if part["text"] != "Hello!" || !sameJSON(t, part["logprobs"], `[`+tokenHello+`,`+tokenBang+`]`) {
		t.Errorf("output_text %v", part)
	}

	resp, err = post(gw, "/v1/responses", ask+`,"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Header.Get("X-Fleet-Model-Policy"); p != "fast" {
		t.Errorf("stream header X-Fleet-Model-Policy %q", p)
	}
	var deltas []any
	var done, final map[string]any
	for _, ev := range events(t, resp) {
		switch ev["type"] {
		case openai.EventTextDelta:
			deltas = append(deltas, ev["logprobs"].([]any)...)
		case openai.EventTextDone:
			done = ev
		case openai.EventCompleted:
			final = ev["response"].(map[string]any)
		}
	}
	if !sameJSON(t, deltas, `[`+tokenHello+`,`+tokenBang+`]`) || done == nil || !sameJSON(t, done["logprobs"], `[`+tokenHello+`,`+tokenBang+`]`) {
		t.Errorf("streamed logprobs: deltas %v, done %v", deltas, done)
	}
	if final == nil || final["model"] != answeringModel || final["service_tier"] != "default" ||
		!sameJSON(t, final["usage"], `{"input_tokens":9,"input_tokens_details":{"cached_tokens":4},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":11}`) {
		t.Errorf("response.completed: %v", final)
	}
}

// A Bedrock target's stream names no model: the chunks name the deployment's model id,
// and both stream formats carry the X-Fleet-Model-* headers.
func TestStreamsFromBedrockNameTheModelAndDeployment(t *testing.T) {
	gw, _, _ := upstream(t, "bedrock", func(int, *router.Request) rt.Reply { return rt.Reply{Text: "hello"} }, false)
	for path, body := range map[string]string{
		"/v1/chat/completions":     `{"model":"p","messages":[{"role":"user","content":"x"}],"stream":true}`,
		"/model/p/converse-stream": `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`,
	} {
		resp, err := post(gw, path, body)
		if err != nil {
			t.Fatal(err)
		}
		if p, d := resp.Header.Get("X-Fleet-Model-Policy"), resp.Header.Get("X-Fleet-Model-Deployment"); resp.StatusCode != 200 || p != "p" || d != "bedrock/m" {
			t.Errorf("%s: %d, X-Fleet-Model-Policy %q, X-Fleet-Model-Deployment %q", path, resp.StatusCode, p, d)
		}
		if !strings.HasPrefix(path, "/v1/") {
			resp.Body.Close()
			continue
		}
		for _, c := range events(t, resp) {
			if c["model"] != "m" {
				t.Errorf("chunk names model %v, want m", c["model"])
			}
		}
	}
}
