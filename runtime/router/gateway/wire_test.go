package gateway_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/gateway/gatewayenv"
	"github.com/fleetc/fleetc/runtime/router/openai"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// These tests drive the gateway's listener with the clients handler authors use (the
// AWS SDK for Go; plain HTTP for the OpenAI shape, whose SDKs run in gateway-clients)
// in front of fake upstreams that speak each provider's wire format (routertest).

// upstream is one fake provider and a router whose policy "p" uses it (fallback "spare",
// an OpenAI fake answering "spare", when fallback is set).
func upstream(t *testing.T, kind string, script rt.Script, fallback bool) (*gateway.Gateway, *rt.Server, *rt.Server) {
	t.Helper()
	var srv *rt.Server
	var p router.Provider
	if kind == "bedrock" {
		srv = rt.Bedrock(t, script)
		p = rt.BedrockProvider(srv)
	} else {
		srv = rt.OpenAI(t, "", script)
		p = rt.OpenAIProvider(srv, "")
	}
	spare := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "spare"}))
	pol := router.Policy{Name: "p", Deployments: []router.Deployment{{Name: kind + "/m", Model: "m", Provider: p}},
		Retries: 1, Timeout: 3 * time.Second, AllowedFails: 100, Cooldown: time.Minute, BackoffBase: time.Millisecond, BackoffCap: 2 * time.Millisecond}
	if fallback {
		pol.Fallbacks = []string{"spare"}
	}
	r, err := router.New([]router.Policy{pol, {Name: "spare", Deployments: []router.Deployment{{Name: "spare", Model: "spare-model", Provider: rt.OpenAIProvider(spare, "")}}, Timeout: 3 * time.Second}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(r, "p", "127.0.0.1:0", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	return gw, srv, spare
}

func TestGatewayRequiresTokenLoopbackHostAndJSON(t *testing.T) {
	gw, srv, _ := upstream(t, "openai", rt.Always(rt.Reply{Text: "hi"}), false)
	body := `{"messages":[{"role":"user","content":"x"}]}`
	send := func(path, host, token, ct string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, gw.URL()+path, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(gw.URL(), "http://"))
	for _, c := range []struct {
		name, path, host, token, ct string
		status                      int
		errType                     string
	}{
		{"no token", "/v1/chat/completions", "", "", "application/json", 401, ""},
		{"wrong token", "/v1/chat/completions", "", "nope", "application/json", 401, ""},
		{"no token, converse", "/model/m/converse", "", "", "application/json", 403, "UnrecognizedClientException"},
		{"DNS rebinding", "/v1/chat/completions", "attacker.example:" + port, gw.Token(), "application/json", 403, ""},
		{"form post", "/v1/chat/completions", "", gw.Token(), "application/x-www-form-urlencoded", 415, ""},
		{"text/plain converse", "/model/m/converse", "", gw.Token(), "text/plain", 415, "ValidationException"},
		{"localhost", "/v1/chat/completions", "localhost:" + port, gw.Token(), "application/json; charset=utf-8", 200, ""},
		{"ok", "/v1/chat/completions", "", gw.Token(), "application/json", 200, ""},
	} {
		resp := send(c.path, c.host, c.token, c.ct)
		if resp.StatusCode != c.status || resp.Header.Get("X-Amzn-ErrorType") != c.errType {
			t.Errorf("%s: %d %q, want %d %q", c.name, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), c.status, c.errType)
		}
	}
	if srv.Calls() != 2 {
		t.Fatalf("upstream got %d calls, want only the 2 accepted ones", srv.Calls())
	}
	for _, kv := range gw.Env() {
		if kv == gatewayenv.Token+"="+gw.Token() {
			return
		}
	}
	t.Fatalf("Env() %v does not pass the token", gw.Env())
}

func TestGatewayServesCleartextHTTP2(t *testing.T) {
	gw, _, _ := upstream(t, "openai", rt.Always(rt.Reply{Text: "over h2"}), false)
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: &protos, TLSClientConfig: &tls.Config{}}}
	req, _ := http.NewRequest(http.MethodPost, gw.URL()+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gw.Token())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.Contains(string(b), "over h2") {
		t.Fatalf("%s %d %s", resp.Proto, resp.StatusCode, b)
	}
}

// sse posts a streamed chat completion and reads its chunks (the [DONE] marker as a nil chunk).
func sse(t *testing.T, gw *gateway.Gateway, body string) (chunks []*openai.Chunk, done bool) {
	t.Helper()
	resp, err := post(gw, "/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream answered %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c openai.Chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		chunks = append(chunks, &c)
	}
	return chunks, done
}

// assembled is what an SSE client makes of the chunks.
func assembled(chunks []*openai.Chunk) (text, args, toolName, finish string, usage *openai.WireUsage, errMsg string) {
	for _, c := range chunks {
		if c.Error != nil {
			errMsg = c.Error.Message
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				args += tc.Function.Arguments
				toolName += tc.Function.Name
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return
}

// Every combination of client API (OpenAI SSE, ConverseStream) and upstream provider
// (Bedrock ConverseStream, OpenAI SSE) streams text, tool calls and usage.
func TestStreamingEveryProviderCombination(t *testing.T) {
	tool := &router.ToolUse{ID: "call-1", Name: "lookup", Input: json.RawMessage(`{"q":"weather in Oslo"}`)}
	for _, kind := range []string{"bedrock", "openai"} {
		script := func(n int, req *router.Request) rt.Reply {
			if len(req.Tools) > 0 {
				return rt.Reply{ToolUse: tool, Usage: router.Usage{InputTokens: 20, OutputTokens: 8}}
			}
			return rt.Reply{Text: "streamed from " + kind, Usage: router.Usage{InputTokens: 11, OutputTokens: 4}}
		}
		gw, srv, _ := upstream(t, kind, script, false)

		chunks, done := sse(t, gw, `{"model":"p","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
		text, _, _, finish, usage, errMsg := assembled(chunks)
		if !done || errMsg != "" || text != "streamed from "+kind || finish != "stop" || usage == nil || usage.PromptTokens != 11 || usage.CompletionTokens != 4 {
			t.Errorf("%s upstream, SSE client: text %q finish %q usage %+v done %v error %q", kind, text, finish, usage, done, errMsg)
		}
		chunks, _ = sse(t, gw, `{"stream":true,"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"x"}]}`)
		_, args, name, finish, usage, _ := assembled(chunks)
		if args != string(tool.Input) || name != "lookup" || finish != "tool_calls" || usage != nil {
			t.Errorf("%s upstream, SSE tool call: args %q name %q finish %q usage %+v (not asked for)", kind, args, name, finish, usage)
		}

		evs, err := converseStream(t, gw, `{"messages":[{"role":"user","content":[{"text":"x"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"lookup","inputSchema":{"json":{"type":"object"}}}}]}}`)
		var input, toolID, stop string
		var in int
		for _, ev := range evs {
			switch ev.Kind {
			case router.EventBlockStart:
				toolID = ev.ToolUse.ID
			case router.EventBlockDelta:
				input += ev.ToolInput
			case router.EventMessageStop:
				stop = ev.StopReason
			case router.EventMetadata:
				in = ev.Usage.InputTokens
			}
		}
		if err != nil || input != string(tool.Input) || toolID != "call-1" || stop != router.StopToolUse || in != 20 {
			t.Errorf("%s upstream, ConverseStream: %v input %q id %q stop %q input tokens %d", kind, err, input, toolID, stop, in)
		}
		if srv.Calls() != 3 {
			t.Errorf("%s upstream: %d calls, want 3", kind, srv.Calls())
		}
	}
}

// Before the first byte a failed stream falls back; after it, the client gets an error
// event and nothing is retried.
func TestStreamFallsBackOnlyBeforeTheFirstByte(t *testing.T) {
	for _, kind := range []string{"bedrock", "openai"} {
		gw, srv, spare := upstream(t, kind, rt.Always(rt.Reply{Status: 503, ErrorCode: "ServiceUnavailableException"}), true)
		text, _, _, finish, _, _ := assembled(must(sse(t, gw, `{"stream":true,"messages":[{"role":"user","content":"x"}]}`)))
		if text != "spare" || finish != "stop" || srv.Calls() != 2 || spare.Calls() != 1 {
			t.Errorf("%s down before the first byte: %q (primary %d calls, spare %d)", kind, text, srv.Calls(), spare.Calls())
		}

		gw, srv, spare = upstream(t, kind, rt.Always(rt.Reply{Text: "half an answer", FailAfter: 2}), true)
		chunks, done := sse(t, gw, `{"stream":true,"messages":[{"role":"user","content":"x"}]}`)
		text, _, _, _, _, errMsg := assembled(chunks)
		if done || errMsg == "" || text != "half an" || srv.Calls() != 1 || spare.Calls() != 0 {
			t.Errorf("%s failing mid-stream: text %q error %q done %v (primary %d calls, spare %d)", kind, text, errMsg, done, srv.Calls(), spare.Calls())
		}
		_, err := converseStream(t, gw, `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`)
		var pe *router.ProviderError
		if !errors.As(err, &pe) || pe.Code != "ModelStreamErrorException" {
			t.Errorf("%s failing mid-stream, ConverseStream: err %v, want a ModelStreamErrorException", kind, err)
		}
	}
}

// converseStream posts to /converse-stream and decodes the AWS event-stream answer (the
// SDK's own decoding is exercised by gateway-clients' @aws-sdk/client-bedrock-runtime).
func converseStream(t *testing.T, gw *gateway.Gateway, body string) ([]router.StreamEvent, error) {
	t.Helper()
	resp, err := post(gw, "/model/p/converse-stream", body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != bedrock.ContentTypeEventStream {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("converse-stream answered %d: %s", resp.StatusCode, b)
	}
	r := bedrock.NewEventReader(resp.Body)
	defer r.Close()
	var evs []router.StreamEvent
	for {
		ev, err := r.Recv()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func must(chunks []*openai.Chunk, _ bool) []*openai.Chunk { return chunks }

// Every documented request field reaches the upstream in its own format, or the request is
// refused with a 400 that names it.
func TestRequestFieldsPassThroughOrAreRefused(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	full := `{"model":"p","max_completion_tokens":77,"temperature":0.5,"top_p":0.9,"stop":["END"],"seed":7,
		"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}},
		"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"lookup"}},
		"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png + `"}}]}]}`
	gw, srv, _ := upstream(t, "openai", rt.Always(rt.Reply{Text: `{"a":"b"}`}), false)
	resp, err := post(gw, "/v1/chat/completions", full)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp.Status, err)
	}
	var got map[string]any
	json.Unmarshal(srv.Bodies()[0], &got)
	for k, want := range map[string]string{
		"max_completion_tokens": "77", "temperature": "0.5", "top_p": "0.9", "stop": `["END"]`, "seed": "7",
		"response_format": `{"json_schema":{"name":"answer","schema":{"properties":{"a":{"type":"string"}},"type":"object"},"strict":true},"type":"json_schema"}`,
		"tool_choice":     `{"function":{"name":"lookup"},"type":"function"}`,
	} {
		if b, _ := json.Marshal(got[k]); string(b) != want {
			t.Errorf("openai upstream got %s = %s, want %s", k, b, want)
		}
	}
	if _, deprecated := got["max_tokens"]; deprecated {
		t.Error("the OpenAI provider sent the deprecated max_tokens")
	}
	if b, _ := json.Marshal(got["messages"]); !strings.Contains(string(b), `"image_url":{"url":"data:image/png;base64,`+png+`"}`) {
		t.Errorf("image part lost: %s", b)
	}

	// The same request to a Bedrock upstream: Converse has no seed: refused by name.
	gwB, srvB, _ := upstream(t, "bedrock", rt.Always(rt.Reply{Text: "x"}), false)
	resp, _ = post(gwB, "/v1/chat/completions", full)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "seed") || srvB.Calls() != 0 {
		t.Errorf("seed to a Bedrock target: %d %s", resp.StatusCode, b)
	}
	// Without it: every field in Converse's terms, response_format as a forced tool.
	resp, _ = post(gwB, "/v1/chat/completions", strings.Replace(strings.Replace(full, `"seed":7,`, "", 1), `"tool_choice":{"type":"function","function":{"name":"lookup"}},`, "", 1))
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || srvB.Calls() != 1 {
		t.Fatalf("to Bedrock: %d %s", resp.StatusCode, b)
	}
	var conv map[string]any
	json.Unmarshal(srvB.Bodies()[0], &conv)
	cb, _ := json.Marshal(conv)
	for _, want := range []string{`"inferenceConfig":{"maxTokens":77,"stopSequences":["END"],"temperature":0.5,"topP":0.9}`,
		`"toolChoice":{"tool":{"name":"json_response"}}`, `"image":{"format":"png","source":{"bytes":"` + png + `"}}`} {
		if !strings.Contains(string(cb), want) {
			t.Errorf("Bedrock upstream request lacks %s: %s", want, cb)
		}
	}

	for body, field := range map[string]string{
		`{"messages":[{"role":"user","content":"x"}],"frobnicate":1}`:                        "frobnicate",
		`{"messages":[{"role":"user","content":"x"}],"n":3}`:                                 `\"n\"`,
		`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`: "input_audio",
		`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}`:      "response_format",
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":"sometimes"}`:             "tool_choice",
	} {
		resp, _ := post(gw, "/v1/chat/completions", body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), field) || resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("%s: %d %s, want a final 400 naming %s", body, resp.StatusCode, b, field)
		}
	}
	resp, _ = post(gwB, "/model/m/converse", `{"messages":[{"role":"user","content":[{"text":"x"}]}],"guardrailConfig":{"guardrailIdentifier":"g"}}`)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "guardrailConfig") || resp.Header.Get("X-Amzn-ErrorType") != "ValidationException" {
		t.Errorf("converse guardrailConfig: %d %s", resp.StatusCode, b)
	}
}

// Converse fields to an OpenAI upstream: topP, stopSequences, a JSON tool result; and
// parallel tool results from an OpenAI client reach Bedrock as one user message.
func TestConverseFieldsAndParallelToolResults(t *testing.T) {
	gw, srv, _ := upstream(t, "openai", rt.Always(rt.Reply{Text: "ok"}), false)
	_, err := gatewayClient(gw).Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("p"),
		InferenceConfig: &types.InferenceConfiguration{TopP: aws.Float32(0.25), StopSequences: []string{"STOP"}, MaxTokens: aws.Int32(9)},
		Messages: []types.Message{
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "x"}}},
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("t1"), Name: aws.String("lookup"), Input: document.NewLazyDocument(map[string]any{})}}}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("t1"),
				Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberJson{Value: document.NewLazyDocument(map[string]any{"temp": 3})}}}}}},
		},
		ToolConfig: &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String("lookup"),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object"})}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	body := string(srv.Bodies()[0])
	for _, want := range []string{`"top_p":0.25`, `"stop":["STOP"]`, `"max_completion_tokens":9`, `{"role":"tool","content":"{\"temp\":3}","tool_call_id":"t1"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("OpenAI upstream request lacks %s: %s", want, body)
		}
	}

	gwB, srvB, _ := upstream(t, "bedrock", rt.Always(rt.Reply{Text: "both done"}), false)
	resp, err := post(gwB, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"a","content":"A"},{"role":"tool","tool_call_id":"b","content":"B"}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp.Status, err)
	}
	msgs := srvB.Requests()[0].Messages
	if len(msgs) != 3 || msgs[2].Role != "user" || len(msgs[2].Content) != 2 || msgs[2].Content[0].ToolResult.ID != "a" || msgs[2].Content[1].ToolResult.ID != "b" {
		t.Fatalf("Bedrock got %+v: want the two tool results in one user message", msgs)
	}
}
