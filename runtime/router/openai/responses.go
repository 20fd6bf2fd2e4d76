package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/runtime/router"
)

// The Responses API (POST /v1/responses), as the OpenAI API reference documents it, and
// its mapping onto the router's types. The gateway keeps no state, so everything that
// needs a stored response (previous_response_id, store: true, item_reference, a
// conversation) is refused with a 400 naming it; every target, OpenAI-compatible or
// Bedrock, gets the request as a chat completion or a Converse call and the answer is
// translated back (docs/model-gateway.md has the tables).

// ResponsesRequest is the request body.
type ResponsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions,omitempty"`
	Tools              []ResponsesTool `json:"tools,omitempty"`
	ToolChoice         json.RawMessage `json:"tool_choice,omitempty"`
	Text               *ResponsesText  `json:"text,omitempty"`
	MaxOutputTokens    int             `json:"max_output_tokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"top_p,omitempty"`
	Stream             bool            `json:"stream,omitempty"`
	Store              *bool           `json:"store,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Include            []string        `json:"include,omitempty"`
	TopLogprobs        *int            `json:"top_logprobs,omitempty"`
	Reasoning          *struct {
		Effort  string `json:"effort,omitempty"`
		Summary string `json:"summary,omitempty"`
	} `json:"reasoning,omitempty"`
	Truncation    string `json:"truncation,omitempty"`
	StreamOptions *struct {
		IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
	} `json:"stream_options,omitempty"`
	// Extra are the fields chat completions has under the same name, passed to an
	// OpenAI-compatible target as they came (a Bedrock target refuses them by name).
	Extra map[string]json.RawMessage `json:"-"`
}

// ResponsesTool is a function tool (the Responses API's flat shape).
type ResponsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponsesText is text: the output format and verbosity.
type ResponsesText struct {
	Format *struct {
		Type        string          `json:"type"`
		Name        string          `json:"name,omitempty"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	} `json:"format,omitempty"`
	Verbosity json.RawMessage `json:"verbosity,omitempty"`
}

// IncludeLogprobs is the include value that asks for the output text's logprobs.
const IncludeLogprobs = "message.output_text.logprobs"

// responsesFields are the fields ResponsesRequest maps; responsesExtra pass through
// under the same name to an OpenAI-compatible target.
var (
	responsesFields = []string{"model", "input", "instructions", "tools", "tool_choice", "text", "max_output_tokens",
		"temperature", "top_p", "stream", "store", "previous_response_id", "include", "top_logprobs", "reasoning",
		"truncation", "stream_options"}
	responsesExtra = []string{"parallel_tool_calls", "metadata", "user", "service_tier", "safety_identifier", "prompt_cache_key"}
)

// DecodeResponsesRequest reads a request body, refusing any field it would otherwise drop
// and anything that needs state the gateway does not keep.
func DecodeResponsesRequest(body []byte) (*ResponsesRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	var rr ResponsesRequest
	if err := json.Unmarshal(body, &rr); err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(fields) {
		switch {
		case string(fields[k]) == "null":
		case slices.Contains(responsesFields, k):
		case slices.Contains(responsesExtra, k):
			if rr.Extra == nil {
				rr.Extra = map[string]json.RawMessage{}
			}
			rr.Extra[k] = fields[k]
		default:
			return nil, fmt.Errorf("unsupported field %q", k)
		}
	}
	switch {
	case rr.PreviousResponseID != "":
		return nil, fmt.Errorf("field \"previous_response_id\": the gateway keeps no responses; send the whole conversation in input")
	case rr.Store != nil && *rr.Store:
		return nil, fmt.Errorf("field \"store\": the gateway keeps no responses; send store: false (or leave it out) and the whole conversation in input")
	case rr.Truncation != "" && rr.Truncation != "disabled":
		return nil, fmt.Errorf("field \"truncation\": only \"disabled\" (a context-window error, which the policy's context_window_fallbacks take)")
	case rr.Reasoning != nil && rr.Reasoning.Summary != "":
		return nil, fmt.Errorf("field \"reasoning.summary\": reasoning summaries are not available through chat completions or Converse")
	}
	for _, inc := range rr.Include {
		if inc != IncludeLogprobs {
			return nil, fmt.Errorf("field \"include\": %q is not supported (only %q)", inc, IncludeLogprobs)
		}
	}
	return &rr, nil
}

// ToRouter converts the request: instructions and system/developer messages become the
// system prompt, consecutive turns of one role one message (as Converse requires).
func (rr *ResponsesRequest) ToRouter() (*router.Request, error) {
	r := &router.Request{MaxTokens: rr.MaxOutputTokens, Temperature: rr.Temperature, TopP: rr.TopP}
	rr.extra(r)
	for i, t := range rr.Tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("tools[%d]: type %q is not supported (function only)", i, t.Type)
		}
		r.Tools = append(r.Tools, router.Tool{Name: t.Name, Description: t.Description, Schema: t.Parameters})
	}
	if err := rr.toolChoice(r); err != nil {
		return nil, err
	}
	if err := rr.format(r); err != nil {
		return nil, err
	}
	var system []string
	if rr.Instructions != "" {
		system = append(system, rr.Instructions)
	}
	items, err := inputItems(rr.Input)
	if err != nil {
		return nil, err
	}
	for i, raw := range items {
		role, blocks, err := inputItem(raw)
		if err != nil {
			return nil, fmt.Errorf("input[%d]: %w", i, err)
		}
		if role == "system" {
			for _, b := range blocks {
				system = append(system, b.Text)
			}
			continue
		}
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
			r.Messages[n-1].Content = append(r.Messages[n-1].Content, blocks...)
			continue
		}
		r.Messages = append(r.Messages, router.Message{Role: role, Content: blocks})
	}
	r.System = strings.Join(system, "\n\n")
	return r, nil
}

// extra carries the fields chat completions has too, and the logprobs the include asks for.
func (rr *ResponsesRequest) extra(r *router.Request) {
	set := func(k string, v any) {
		if r.Extra == nil {
			r.Extra = map[string]json.RawMessage{}
		}
		r.Extra[k], _ = json.Marshal(v)
	}
	for k, v := range rr.Extra {
		set(k, v)
	}
	if slices.Contains(rr.Include, IncludeLogprobs) || rr.TopLogprobs != nil {
		set("logprobs", true)
	}
	if rr.TopLogprobs != nil {
		set("top_logprobs", *rr.TopLogprobs)
	}
	if rr.Reasoning != nil && rr.Reasoning.Effort != "" {
		set("reasoning_effort", rr.Reasoning.Effort)
	}
	if rr.Text != nil && len(rr.Text.Verbosity) > 0 && string(rr.Text.Verbosity) != "null" {
		set("verbosity", rr.Text.Verbosity)
	}
}

func (rr *ResponsesRequest) toolChoice(r *router.Request) error {
	if len(rr.ToolChoice) == 0 || string(rr.ToolChoice) == "null" {
		return nil
	}
	var s string
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	switch {
	case json.Unmarshal(rr.ToolChoice, &s) == nil && (s == router.ToolChoiceAuto || s == router.ToolChoiceNone):
		r.ToolChoice.Type = s
	case s == "required":
		r.ToolChoice.Type = router.ToolChoiceAny
	case json.Unmarshal(rr.ToolChoice, &obj) == nil && obj.Type == "function" && obj.Name != "":
		r.ToolChoice = router.ToolChoice{Type: router.ToolChoiceSpecific, Name: obj.Name}
	default:
		return fmt.Errorf("field \"tool_choice\": %s is not auto, none, required or a function", rr.ToolChoice)
	}
	return nil
}

func (rr *ResponsesRequest) format(r *router.Request) error {
	if rr.Text == nil || rr.Text.Format == nil {
		return nil
	}
	f := rr.Text.Format
	switch f.Type {
	case "text":
	case "json_object":
		r.ResponseFormat = &router.ResponseFormat{}
	case "json_schema":
		if len(f.Schema) == 0 {
			return fmt.Errorf("field \"text.format\": json_schema without its schema")
		}
		r.ResponseFormat = &router.ResponseFormat{Name: f.Name, Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}
	default:
		return fmt.Errorf("field \"text.format\": type %q is not supported", f.Type)
	}
	return nil
}

// inputItems is input as a list of items: a string is one user message.
func inputItems(input json.RawMessage) ([]json.RawMessage, error) {
	var s string
	if json.Unmarshal(input, &s) == nil {
		msg, _ := json.Marshal(map[string]string{"role": router.RoleUser, "content": s})
		return []json.RawMessage{msg}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(input, &items); err != nil || len(items) == 0 {
		return nil, fmt.Errorf("field \"input\": want a string or a non-empty array of items")
	}
	return items, nil
}

// inputPart is a message content part.
type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
	Detail   string `json:"detail"`
	Refusal  string `json:"refusal"`
}

// inputItem is one input item as a role ("system" for system and developer messages) and
// its blocks.
func inputItem(raw json.RawMessage) (string, []router.Block, error) {
	var it struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return "", nil, err
	}
	switch it.Type {
	case "function_call":
		args := json.RawMessage(it.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if !json.Valid(args) {
			return "", nil, fmt.Errorf("function_call %s: arguments are not JSON", it.CallID)
		}
		return router.RoleAssistant, []router.Block{{ToolUse: &router.ToolUse{ID: it.CallID, Name: it.Name, Input: args}}}, nil
	case "function_call_output":
		out, err := outputText(it.Output)
		if err != nil {
			return "", nil, fmt.Errorf("function_call_output %s: %w", it.CallID, err)
		}
		return router.RoleUser, []router.Block{{ToolResult: &router.ToolResult{ID: it.CallID, Content: out}}}, nil
	case "message", "":
	case "item_reference":
		return "", nil, fmt.Errorf("item_reference: the gateway keeps no responses; send the items themselves (AI SDK: providerOptions.openai.store = false)")
	default:
		return "", nil, fmt.Errorf("item type %q is not supported (message, function_call, function_call_output)", it.Type)
	}
	return messageItem(it.Role, it.Content)
}

// messageItem is a message item's role ("system" for system and developer messages) and
// content: a string, or parts of the kinds the role may send.
func messageItem(asked string, content json.RawMessage) (string, []router.Block, error) {
	role := asked
	switch role {
	case "system", "developer":
		role = "system"
	case router.RoleUser, router.RoleAssistant:
	default:
		return "", nil, fmt.Errorf("role %q is not supported", asked)
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return role, []router.Block{{Text: s}}, nil
	}
	var parts []inputPart
	if err := json.Unmarshal(content, &parts); err != nil {
		return "", nil, fmt.Errorf("content: want a string or an array of parts")
	}
	var blocks []router.Block
	for j, p := range parts {
		switch {
		case p.Type == "input_text" || (p.Type == "output_text" && role == router.RoleAssistant):
			blocks = append(blocks, router.Block{Text: p.Text})
		case p.Type == "refusal" && role == router.RoleAssistant:
			blocks = append(blocks, router.Block{Text: p.Refusal})
		case p.Type == "input_image" && role == router.RoleUser && p.ImageURL != "":
			img, err := imageFrom(p.ImageURL)
			if err != nil {
				return "", nil, fmt.Errorf("content[%d].image_url: %w", j, err)
			}
			img.Detail = p.Detail
			blocks = append(blocks, router.Block{Image: img})
		default:
			return "", nil, fmt.Errorf("content[%d]: part type %q is not supported in a %s message (input_text, input_image by URL; output_text from the assistant)", j, p.Type, asked)
		}
	}
	if role == "system" {
		var sb strings.Builder
		for _, b := range blocks {
			sb.WriteString(b.Text)
		}
		blocks = []router.Block{{Text: sb.String()}}
	}
	if len(blocks) == 0 {
		blocks = []router.Block{{Text: ""}}
	}
	return role, blocks, nil
}

// outputText is a function_call_output's output: a string, or input_text parts.
func outputText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("output: want a string or input_text parts")
	}
	var sb strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" {
			return "", fmt.Errorf("output[%d]: part type %q is not supported (input_text)", j, p.Type)
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

// Response is the Responses API's response object (the fields this gateway fills).
type Response struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	CreatedAt         int64              `json:"created_at"`
	Status            string             `json:"status"`
	Error             *ResponseError     `json:"error"`
	IncompleteDetails *IncompleteDetails `json:"incomplete_details"`
	Model             string             `json:"model"`
	Output            []OutputItem       `json:"output"`
	Usage             *ResponsesUsage    `json:"usage"`
	Store             bool               `json:"store"`
	ServiceTier       string             `json:"service_tier,omitempty"`
	Metadata          map[string]any     `json:"metadata"`
	Tools             []ResponsesTool    `json:"tools"`
	Text              *ResponsesText     `json:"text,omitempty"`
	ParallelToolCalls bool               `json:"parallel_tool_calls"`
	PreviousResponse  *string            `json:"previous_response_id"`
}

// Response statuses.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// OutputItem is a message or a function call.
type OutputItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role,omitempty"`
	Content []OutputPart `json:"content,omitempty"`
	// function_call
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// MarshalJSON writes each kind of item with its own fields: a message always has its
// content array (empty while it is being streamed: the openai SDKs' stream helper appends
// the parts to it), a function call never has one.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	if it.Type == itemFunctionCall {
		type call struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Status    string `json:"status"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		return json.Marshal(call{Type: it.Type, ID: it.ID, Status: it.Status, CallID: it.CallID, Name: it.Name, Arguments: it.Arguments})
	}
	type message struct {
		Type    string       `json:"type"`
		ID      string       `json:"id"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []OutputPart `json:"content"`
	}
	m := message{Type: it.Type, ID: it.ID, Status: it.Status, Role: it.Role, Content: it.Content}
	if m.Content == nil {
		m.Content = []OutputPart{}
	}
	return json.Marshal(m)
}

// OutputPart is a message's output_text.
type OutputPart struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Annotations []any           `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs,omitempty"`
}

// ResponsesUsage is the Responses API's usage.
type ResponsesUsage struct {
	InputTokens         int `json:"input_tokens"`
	InputTokensDetails  any `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails any `json:"output_tokens_details"`
	TotalTokens         int `json:"total_tokens"`
}

func responsesUsage(u router.Usage) *ResponsesUsage {
	return &ResponsesUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.Total(),
		InputTokensDetails:  map[string]int{"cached_tokens": u.CacheReadTokens},
		OutputTokensDetails: map[string]int{"reasoning_tokens": u.ReasoningTokens}}
}

// outcome is a stop reason as a response's status and incomplete_details.
func outcome(stop string) (string, *IncompleteDetails) {
	switch StopToFinish[stop] {
	case "length":
		return StatusIncomplete, &IncompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		return StatusIncomplete, &IncompleteDetails{Reason: "content_filter"}
	}
	return StatusCompleted, nil
}

// textLogprobs is the Responses API's output_text logprobs from a chat completion's
// logprobs object: its content array, whose entries (token, logprob, bytes,
// top_logprobs) have the same shape.
func textLogprobs(chat json.RawMessage) json.RawMessage {
	if len(chat) == 0 {
		return nil
	}
	var lp struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(chat, &lp) != nil || len(lp.Content) == 0 || string(lp.Content) == "null" {
		return nil
	}
	return lp.Content
}

// NewResponse is the response object of an answer begun (status in_progress, no output).
func (rr *ResponsesRequest) NewResponse(id string, created int64, model string) *Response {
	resp := &Response{ID: id, Object: "response", CreatedAt: created, Status: StatusInProgress, Model: model,
		Output: []OutputItem{}, Metadata: map[string]any{}, Tools: rr.Tools, Text: rr.Text, ParallelToolCalls: true}
	if resp.Tools == nil {
		resp.Tools = []ResponsesTool{}
	}
	if v, ok := rr.Extra["metadata"]; ok {
		_ = json.Unmarshal(v, &resp.Metadata)
	}
	if v, ok := rr.Extra["parallel_tool_calls"]; ok {
		_ = json.Unmarshal(v, &resp.ParallelToolCalls)
	}
	return resp
}

// ItemID is the id of output item i of response id.
func ItemID(prefix, responseID string, i int) string {
	return fmt.Sprintf("%s_%s_%d", prefix, strings.TrimPrefix(responseID, "resp_"), i)
}

// Complete fills resp with the whole answer: its output items, usage and status.
func (resp *Response) Complete(a *router.Response) {
	resp.Model = a.Model
	resp.ServiceTier = a.ServiceTier
	resp.Status, resp.IncompleteDetails = outcome(a.StopReason)
	resp.Usage = responsesUsage(a.Usage)
	resp.Output = []OutputItem{}
	var msg *OutputItem
	for _, b := range a.Message.Content {
		if b.ToolUse != nil {
			resp.Output = append(resp.Output, OutputItem{Type: itemFunctionCall, ID: ItemID(functionItemPrefix, resp.ID, len(resp.Output)),
				Status: StatusCompleted, CallID: b.ToolUse.ID, Name: b.ToolUse.Name, Arguments: string(b.ToolUse.Input)})
			msg = nil
			continue
		}
		if msg == nil {
			resp.Output = append(resp.Output, OutputItem{Type: itemMessage, ID: ItemID(messageItemPrefix, resp.ID, len(resp.Output)),
				Status: StatusCompleted, Role: router.RoleAssistant,
				Content: []OutputPart{{Type: outputTextPart, Annotations: []any{}, Logprobs: textLogprobs(a.Logprobs)}}})
			msg = &resp.Output[len(resp.Output)-1]
		}
		msg.Content[0].Text += b.Text
	}
}
