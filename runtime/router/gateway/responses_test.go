package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/openai"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// A Responses request that needs state the gateway does not keep, or a field or item it
// cannot carry, is refused with a 400 naming it, before any upstream call.
func TestResponsesRefusesWhatItCannotCarry(t *testing.T) {
	gw, fb, _ := upstream(t, "openai", rt.Always(rt.Reply{Text: "never"}), false)
	for body, names := range map[string]string{
		`{"model":"p","input":"x","previous_response_id":"resp_1"}`:                                         "previous_response_id",
		`{"model":"p","input":"x","store":true}`:                                                            "store",
		`{"model":"p","input":[{"type":"item_reference","id":"msg_1"}]}`:                                    "item_reference: the gateway keeps no responses",
		`{"model":"p","input":"x","conversation":"conv_1"}`:                                                 "conversation",
		`{"model":"p","input":"x","background":true}`:                                                       "background",
		`{"model":"p","input":"x","tools":[{"type":"web_search"}]}`:                                         "web_search",
		`{"model":"p","input":"x","include":["reasoning.encrypted_content"]}`:                               "reasoning.encrypted_content",
		`{"model":"p","input":"x","truncation":"auto"}`:                                                     "truncation",
		`{"model":"p","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`:                             "reasoning",
		`{"model":"p","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`:      "input_file",
		`{"model":"p","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`:                     "schema",
		`{"model":"p","input":"x","tool_choice":{"type":"file_search"}}`:                                    "tool_choice",
		`{"model":"p","input":[]}`:                                                                          "input",
		`{"model":"p","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{not json"}]}`: "arguments",
	} {
		resp, err := post(gw, "/v1/responses", body)
		if err != nil {
			t.Fatal(err)
		}
		var eb openai.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != 400 || eb.Error.Type != "invalid_request_error" || !strings.Contains(eb.Error.Message, names) {
			t.Errorf("%s: %d %+v, want a 400 naming %s", body, resp.StatusCode, eb.Error, names)
		}
	}
	if fb.Calls() != 0 {
		t.Errorf("the upstream got %d calls for refused requests", fb.Calls())
	}
}

// What a Responses request carries reaches the target: instructions and developer
// messages as the system prompt, the tool round trip as tool use and results, the output
// limit, and the fields chat completions shares by name.
func TestResponsesRequestReachesTheTarget(t *testing.T) {
	gw, fb, _ := upstream(t, "openai", rt.Always(rt.Reply{Text: "ok"}), false)
	resp, err := post(gw, "/v1/responses", `{"model":"p","instructions":"be brief","max_output_tokens":50,"temperature":0.2,
		"user":"u1","parallel_tool_calls":false,"reasoning":{"effort":"low"},"text":{"verbosity":"low"},
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"},
		"input":[{"role":"developer","content":"answer in English"},{"role":"user","content":[{"type":"input_text","text":"q"}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"},
		{"type":"function_call_output","call_id":"c1","output":"42"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || fb.Calls() != 1 {
		t.Fatalf("answered %d after %d upstream calls", resp.StatusCode, fb.Calls())
	}
	var up map[string]any
	json.Unmarshal(fb.Bodies()[0], &up)
	want := map[string]string{
		"messages": `[{"role":"system","content":"be brief\n\nanswer in English"},{"role":"user","content":"q"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},` +
			`{"role":"tool","content":"42","tool_call_id":"c1"}]`,
		"max_completion_tokens": "50", "temperature": "0.2", "user": `"u1"`, "parallel_tool_calls": "false",
		"reasoning_effort": `"low"`, "verbosity": `"low"`,
		"tools":       `[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`,
		"tool_choice": `{"type":"function","function":{"name":"f"}}`,
	}
	for k, v := range want {
		if !sameJSON(t, up[k], v) {
			b, _ := json.Marshal(up[k])
			t.Errorf("upstream %s = %s, want %s", k, b, v)
		}
	}
}

// An answer cut at its token limit is an incomplete response (status incomplete,
// incomplete_details.reason max_output_tokens), whole and streamed (response.incomplete).
func TestResponsesAtTheTokenLimitIsIncomplete(t *testing.T) {
	gw, _, _ := upstream(t, "bedrock", rt.Always(rt.Reply{Text: "cut sho", StopReason: router.StopMaxTokens}), false)
	resp, err := post(gw, "/v1/responses", `{"model":"p","input":"x","max_output_tokens":2}`)
	if err != nil {
		t.Fatal(err)
	}
	var whole openai.Response
	json.NewDecoder(resp.Body).Decode(&whole)
	resp.Body.Close()
	if whole.Status != openai.StatusIncomplete || whole.IncompleteDetails == nil || whole.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("whole: status %q, incomplete_details %+v", whole.Status, whole.IncompleteDetails)
	}
	resp, err = post(gw, "/v1/responses", `{"model":"p","input":"x","max_output_tokens":2,"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, resp)
	last := evs[len(evs)-1]
	final, _ := last["response"].(map[string]any)
	if last["type"] != openai.EventIncomplete || final["status"] != openai.StatusIncomplete ||
		!sameJSON(t, final["incomplete_details"], `{"reason":"max_output_tokens"}`) {
		t.Errorf("streamed: last event %v", last)
	}
}

// cutUpstream is an OpenAI-compatible target whose stream closes after the finish_reason
// chunk, before its usage chunk and data: [DONE]: a connection lost at the very end.
func cutUpstream(t *testing.T) *gateway.Gateway {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"all of it"},"finish_reason":null}]}`+"\n\n"+
			`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
	}))
	t.Cleanup(up.Close)
	r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "p", Model: "m",
		Provider: &openai.Client{BaseURL: up.URL + "/v1"}}}, Timeout: 5 * time.Second}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(r, "p", "127.0.0.1:0", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	return gw
}

// A stream the target cut before data: [DONE] reaches the client as a failed stream in
// both OpenAI APIs, never as a complete answer: chat completions ends with an error chunk
// and no [DONE]; the Responses API with an error event and response.failed, no
// response.completed.
func TestCutUpstreamStreamIsAnErrorForTheClient(t *testing.T) {
	gw := cutUpstream(t)
	chunks, done := sse(t, gw, `{"model":"p","messages":[{"role":"user","content":"x"}],"stream":true}`)
	text, _, _, _, _, errMsg := assembled(chunks)
	if done || errMsg == "" || text != "all of it" {
		t.Errorf("chat stream: text %q, error %q, [DONE] %v; want the text, then an error chunk and no [DONE]", text, errMsg, done)
	}
	resp, err := post(gw, "/v1/responses", `{"model":"p","input":"x","stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range events(t, resp) {
		types = append(types, ev["type"].(string))
	}
	got := strings.Join(types, ",")
	if !strings.HasSuffix(got, ","+openai.EventError+","+openai.EventFailed) || strings.Contains(got, openai.EventCompleted) {
		t.Errorf("responses stream events %s, want error and response.failed last and no response.completed", got)
	}
}

// An answer with text and then a tool call streams as two output items in that order, each
// opened, filled and closed before the next, with distinct ids, from either kind of target;
// response.completed holds both, completed.
func TestResponsesStreamsTextThenToolCallAsTwoItems(t *testing.T) {
	for _, kind := range []string{"openai", "bedrock"} {
		gw, _, _ := upstream(t, kind, rt.Always(rt.Reply{Text: "let me look", ToolUse: &router.ToolUse{ID: "c1", Name: "f", Input: json.RawMessage(`{"a":1}`)}}), false)
		resp, err := post(gw, "/v1/responses", `{"model":"p","input":"x","stream":true,"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`)
		if err != nil {
			t.Fatal(err)
		}
		var seq []string
		var final map[string]any
		last := ""
		for _, ev := range events(t, resp) {
			typ := ev["type"].(string)
			if strings.HasSuffix(typ, ".delta") && last == typ { // one entry per run of deltas
				continue
			}
			last = typ
			idx, _ := ev["output_index"].(float64)
			seq = append(seq, typ)
			if strings.HasPrefix(typ, "response.output_item") || strings.Contains(typ, "delta") {
				seq[len(seq)-1] += "@" + strconv.Itoa(int(idx))
			}
			if typ == openai.EventCompleted {
				final = ev["response"].(map[string]any)
			}
		}
		want := "response.created,response.in_progress,response.output_item.added@0,response.content_part.added,response.output_text.delta@0," +
			"response.output_text.done,response.content_part.done,response.output_item.done@0,response.output_item.added@1," +
			"response.function_call_arguments.delta@1,response.function_call_arguments.done,response.output_item.done@1,response.completed"
		if got := strings.Join(seq, ","); got != want {
			t.Errorf("%s: events\n%s\nwant\n%s", kind, got, want)
		}
		out, _ := final["output"].([]any)
		if len(out) != 2 {
			t.Fatalf("%s: response.completed output %v", kind, final["output"])
		}
		msg, call := out[0].(map[string]any), out[1].(map[string]any)
		if msg["id"] == call["id"] || msg["status"] != "completed" || call["status"] != "completed" || call["arguments"] != `{"a":1}` || call["call_id"] != "c1" ||
			msg["content"].([]any)[0].(map[string]any)["text"] != "let me look" {
			t.Errorf("%s: output %v", kind, out)
		}
	}
}
