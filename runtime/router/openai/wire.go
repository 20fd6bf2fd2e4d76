package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/runtime/router"
)

// The chat-completions wire shapes, as the OpenAI API reference documents them, and
// their mapping onto the router's types (docs/model-gateway.md has the tables).

// ChatRequest is the request body. Fields with no router counterpart but meaningful to
// an OpenAI-compatible target travel in Extra (see extraFields); anything else is refused.
type ChatRequest struct {
	Model               string                     `json:"model"`
	Messages            []ChatMessage              `json:"messages"`
	Tools               []ChatTool                 `json:"tools,omitempty"`
	ToolChoice          json.RawMessage            `json:"tool_choice,omitempty"`
	MaxTokens           int                        `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                        `json:"max_completion_tokens,omitempty"`
	Temperature         *float64                   `json:"temperature,omitempty"`
	TopP                *float64                   `json:"top_p,omitempty"`
	Stop                StringList                 `json:"stop,omitempty"`
	ResponseFormat      *ResponseFormat            `json:"response_format,omitempty"`
	Stream              bool                       `json:"stream,omitempty"`
	StreamOptions       *StreamOptions             `json:"stream_options,omitempty"`
	N                   *int                       `json:"n,omitempty"`
	Extra               map[string]json.RawMessage `json:"-"`
}

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// ResponseFormat is response_format: text, json_object or json_schema.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	} `json:"json_schema,omitempty"`
}

// requestFields are the fields ChatRequest maps; extraFields pass through to an
// OpenAI-compatible target untouched (a Bedrock target refuses them by name).
var requestFields = []string{"model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens",
	"temperature", "top_p", "stop", "response_format", "stream", "stream_options", "n"}

var extraFields = []string{"seed", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
	"user", "parallel_tool_calls", "metadata", "store", "reasoning_effort", "service_tier", "prompt_cache_key",
	"safety_identifier", "verbosity"}

// DecodeRequest reads a request body, refusing any field it would otherwise drop.
func DecodeRequest(body []byte) (*ChatRequest, error) {
	var cr ChatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return nil, err
	}
	unknown := "" // the first unsupported field in sorted order: the one the error names
	member := func(k string, v []byte) {
		switch {
		case slices.Contains(requestFields, k):
		case slices.Contains(extraFields, k):
			if string(v) == "null" {
				delete(cr.Extra, k) // the last of duplicate keys wins, as in the struct
				return
			}
			if cr.Extra == nil {
				cr.Extra = map[string]json.RawMessage{}
			}
			cr.Extra[k] = bytes.Clone(v)
		case unknown == "" || k < unknown:
			unknown = k
		}
	}
	// The members come from a scan of the (valid) body, not a second decode into a map;
	// a key written with escapes takes the map.
	if !eachMember(body, member) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			return nil, err
		}
		cr.Extra, unknown = nil, ""
		for k, v := range fields {
			member(k, v)
		}
	}
	if unknown != "" {
		return nil, fmt.Errorf("unsupported field %q", unknown)
	}
	if len(cr.Extra) == 0 {
		cr.Extra = nil
	}
	return &cr, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MarshalJSON writes the fields and Extra.
func (cr *ChatRequest) MarshalJSON() ([]byte, error) {
	type plain ChatRequest
	b, err := json.Marshal((*plain)(cr))
	if err != nil || len(cr.Extra) == 0 {
		return b, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for _, k := range sortedKeys(cr.Extra) {
		kb, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(cr.Extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// StringList is a string or an array of strings (stop).
type StringList []string

// UnmarshalJSON accepts both forms.
func (s *StringList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = StringList{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(s))
}

// ChatMessage is one message. Content is a string, an array of parts, or null.
type ChatMessage struct {
	Role       string     `json:"role"`
	Content    *Content   `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Content is a message's content: Parts, written as a plain string when it is one text.
type Content struct {
	Parts []Part
}

// Part is one content part: text or image_url.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail,omitempty"`
	} `json:"image_url,omitempty"`
}

// TextContent is a plain string content.
func TextContent(s string) *Content { return &Content{Parts: []Part{{Type: "text", Text: s}}} }

// UnmarshalJSON accepts a string or an array of parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		c.Parts = []Part{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(b, &c.Parts)
}

// MarshalJSON writes one text as a string, anything else as parts.
func (c *Content) MarshalJSON() ([]byte, error) {
	if len(c.Parts) == 1 && c.Parts[0].Type == "text" {
		return json.Marshal(c.Parts[0].Text)
	}
	return json.Marshal(c.Parts)
}

// Text concatenates the text parts.
func (c *Content) Text() string {
	if c == nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range c.Parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// ToolCall is an assistant's function call; Arguments is a JSON string.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatTool is a function tool.
type ChatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	} `json:"function"`
}

// WireUsage is usage. The details objects travel whole (their fields grow: audio,
// accepted and rejected prediction tokens, ...); the router reads the two it accounts.
type WireUsage struct {
	PromptTokens            int             `json:"prompt_tokens"`
	CompletionTokens        int             `json:"completion_tokens"`
	TotalTokens             int             `json:"total_tokens"`
	PromptTokensDetails     json.RawMessage `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails json.RawMessage `json:"completion_tokens_details,omitempty"`
}

// tokenDetails are the details fields the router reads.
type tokenDetails struct {
	CachedTokens    int `json:"cached_tokens"`
	ReasoningTokens int `json:"reasoning_tokens"`
}

// details is a details object's fields and its JSON to pass on; a null or malformed one
// is none.
func details(raw json.RawMessage) (tokenDetails, string) {
	var d tokenDetails
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &d) != nil {
		return tokenDetails{}, ""
	}
	return d, string(raw)
}

func (u *WireUsage) toRouter() router.Usage {
	if u == nil {
		return router.Usage{}
	}
	ru := router.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	var p, c tokenDetails
	p, ru.PromptDetails = details(u.PromptTokensDetails)
	c, ru.CompletionDetails = details(u.CompletionTokensDetails)
	ru.CacheReadTokens, ru.ReasoningTokens = p.CachedTokens, c.ReasoningTokens
	return ru
}

func usageFrom(u router.Usage) *WireUsage {
	w := &WireUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.Total()}
	switch {
	case u.PromptDetails != "":
		w.PromptTokensDetails = json.RawMessage(u.PromptDetails)
	case u.CacheReadTokens > 0:
		w.PromptTokensDetails, _ = json.Marshal(map[string]int{"cached_tokens": u.CacheReadTokens})
	}
	switch {
	case u.CompletionDetails != "":
		w.CompletionTokensDetails = json.RawMessage(u.CompletionDetails)
	case u.ReasoningTokens > 0:
		w.CompletionTokensDetails, _ = json.Marshal(map[string]int{"reasoning_tokens": u.ReasoningTokens})
	}
	return w
}

// Choice is one choice of a response.
type Choice struct {
	Index        int             `json:"index"`
	Message      ChatMessage     `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
}

// ChatResponse is the chat-completions response body.
type ChatResponse struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Created           int64      `json:"created"`
	Model             string     `json:"model"`
	Choices           []Choice   `json:"choices"`
	Usage             *WireUsage `json:"usage,omitempty"`
	SystemFingerprint string     `json:"system_fingerprint,omitempty"`
	ServiceTier       string     `json:"service_tier,omitempty"`
}

// logprobs is a logprobs value worth passing on: not absent, not null.
func logprobs(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// ErrorBody is the error envelope.
type ErrorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

// FinishToStop maps finish_reason onto the router's stop reasons; StopToFinish maps back.
// Each row is a row of docs/model-gateway.md's table.
var FinishToStop = map[string]string{
	"stop":           router.StopEndTurn,
	"length":         router.StopMaxTokens,
	"tool_calls":     router.StopToolUse,
	"function_call":  router.StopToolUse,
	"content_filter": router.StopContentFiltered,
}

var StopToFinish = map[string]string{
	router.StopEndTurn:              "stop",
	router.StopSequence:             "stop",
	router.StopToolUse:              "tool_calls",
	router.StopMaxTokens:            "length",
	router.StopContextWindowReached: "length",
	router.StopGuardrail:            "content_filter",
	router.StopContentFiltered:      "content_filter",
	router.StopMalformedOutput:      "stop",
	router.StopMalformedToolUse:     "stop",
}

func finishReason(stop string) string {
	if f, ok := StopToFinish[stop]; ok {
		return f
	}
	return "stop"
}

func stopReason(finish string) string {
	if s, ok := FinishToStop[finish]; ok {
		return s
	}
	return router.StopEndTurn
}

// FromRouterRequest builds the wire request an OpenAI-compatible target gets.
func FromRouterRequest(model string, req *router.Request) *ChatRequest {
	cr := &ChatRequest{Model: model, MaxCompletionTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP,
		Stop: req.Stop, Extra: req.Extra}
	if req.System != "" {
		cr.Messages = append(cr.Messages, ChatMessage{Role: "system", Content: TextContent(req.System)})
	}
	for _, t := range req.Tools {
		var ct ChatTool
		ct.Type = "function"
		ct.Function.Name, ct.Function.Description, ct.Function.Parameters = t.Name, t.Description, t.Schema
		cr.Tools = append(cr.Tools, ct)
	}
	switch req.ToolChoice.Type {
	case router.ToolChoiceAuto, router.ToolChoiceNone:
		cr.ToolChoice, _ = json.Marshal(req.ToolChoice.Type)
	case router.ToolChoiceAny:
		cr.ToolChoice = json.RawMessage(`"required"`)
	case router.ToolChoiceSpecific:
		cr.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice.Name}})
	}
	if rf := req.ResponseFormat; rf != nil {
		cr.ResponseFormat = &ResponseFormat{Type: "json_object"}
		if len(rf.Schema) > 0 {
			cr.ResponseFormat.Type = "json_schema"
			cr.ResponseFormat.JSONSchema = &struct {
				Name        string          `json:"name"`
				Description string          `json:"description,omitempty"`
				Schema      json.RawMessage `json:"schema,omitempty"`
				Strict      *bool           `json:"strict,omitempty"`
			}{Name: rf.Name, Schema: rf.Schema}
			if rf.Strict {
				cr.ResponseFormat.JSONSchema.Strict = &rf.Strict
			}
		}
	}
	for _, m := range req.Messages {
		var parts []Part
		var calls []ToolCall
		for _, b := range m.Content {
			switch {
			case b.ToolResult != nil:
				cr.Messages = append(cr.Messages, ChatMessage{Role: "tool", ToolCallID: b.ToolResult.ID, Content: TextContent(b.ToolResult.Text())})
			case b.ToolUse != nil:
				var tc ToolCall
				tc.ID, tc.Type = b.ToolUse.ID, "function"
				tc.Function.Name, tc.Function.Arguments = b.ToolUse.Name, string(b.ToolUse.Input)
				calls = append(calls, tc)
			case b.Image != nil:
				p := Part{Type: "image_url"}
				p.ImageURL = &struct {
					URL    string `json:"url"`
					Detail string `json:"detail,omitempty"`
				}{URL: b.Image.URL, Detail: b.Image.Detail}
				if len(b.Image.Data) > 0 {
					p.ImageURL.URL = "data:image/" + b.Image.Format + ";base64," + base64.StdEncoding.EncodeToString(b.Image.Data)
				}
				parts = append(parts, p)
			default:
				parts = append(parts, Part{Type: "text", Text: b.Text})
			}
		}
		if len(parts) > 0 || len(calls) > 0 {
			msg := ChatMessage{Role: m.Role, ToolCalls: calls}
			if len(parts) > 0 {
				msg.Content = &Content{Parts: parts}
			}
			cr.Messages = append(cr.Messages, msg)
		}
	}
	return cr
}

// ToRouter converts a wire request (the gateway's input). Consecutive user turns (several
// tool results, then perhaps the user's text) become one user message, as Converse
// requires; a field or part it cannot carry is an error naming it.
func (cr *ChatRequest) ToRouter() (*router.Request, error) {
	if cr.N != nil && *cr.N != 1 {
		return nil, fmt.Errorf("field \"n\": only 1 choice is supported")
	}
	r := &router.Request{MaxTokens: cr.MaxTokens, Temperature: cr.Temperature, TopP: cr.TopP, Stop: cr.Stop, Extra: cr.Extra}
	if cr.MaxCompletionTokens > 0 {
		r.MaxTokens = cr.MaxCompletionTokens
	}
	for _, t := range cr.Tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("tools: type %q is not supported (function only)", t.Type)
		}
		r.Tools = append(r.Tools, router.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
	}
	var err error
	if len(cr.ToolChoice) > 0 {
		if r.ToolChoice, err = toolChoice(cr.ToolChoice); err != nil {
			return nil, err
		}
	}
	if r.ResponseFormat, err = cr.ResponseFormat.toRouter(); err != nil {
		return nil, err
	}
	for i, m := range cr.Messages {
		blocks, err := m.parts(i)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "system", "developer":
			r.System += m.Content.Text()
			continue
		case "tool":
			blocks = []router.Block{{ToolResult: &router.ToolResult{ID: m.ToolCallID, Content: m.Content.Text()}}}
		case router.RoleUser:
		case router.RoleAssistant:
			for _, tc := range m.ToolCalls {
				args := json.RawMessage(tc.Function.Arguments)
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				blocks = append(blocks, router.Block{ToolUse: &router.ToolUse{ID: tc.ID, Name: tc.Function.Name, Input: args}})
			}
		default:
			return nil, fmt.Errorf("messages[%d]: role %q is not supported", i, m.Role)
		}
		role := m.Role
		if role == "tool" {
			role = router.RoleUser
		}
		if len(blocks) == 0 {
			blocks = []router.Block{{Text: ""}}
		}
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role && role == router.RoleUser {
			r.Messages[n-1].Content = append(r.Messages[n-1].Content, blocks...)
			continue
		}
		r.Messages = append(r.Messages, router.Message{Role: role, Content: blocks})
	}
	return r, nil
}

// toolChoice reads tool_choice: "auto", "none", "required" or {"type": "function",
// "function": {"name": …}}.
func toolChoice(raw json.RawMessage) (router.ToolChoice, error) {
	var s string
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	switch {
	case json.Unmarshal(raw, &s) == nil && (s == "auto" || s == "none"):
		return router.ToolChoice{Type: s}, nil
	case s == "required":
		return router.ToolChoice{Type: router.ToolChoiceAny}, nil
	case json.Unmarshal(raw, &obj) == nil && obj.Type == "function" && obj.Function.Name != "":
		return router.ToolChoice{Type: router.ToolChoiceSpecific, Name: obj.Function.Name}, nil
	default:
		return router.ToolChoice{}, fmt.Errorf("field \"tool_choice\": %s is not auto, none, required or a function", raw)
	}
}

// toRouter is response_format as the router's, nil for none or plain text.
func (rf *ResponseFormat) toRouter() (*router.ResponseFormat, error) {
	if rf == nil {
		return nil, nil
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &router.ResponseFormat{}, nil
	case "json_schema":
		if rf.JSONSchema == nil {
			return nil, fmt.Errorf("field \"response_format\": json_schema without its schema")
		}
		out := &router.ResponseFormat{Name: rf.JSONSchema.Name, Schema: rf.JSONSchema.Schema}
		if rf.JSONSchema.Strict != nil {
			out.Strict = *rf.JSONSchema.Strict
		}
		return out, nil
	default:
		return nil, fmt.Errorf("field \"response_format\": type %q is not supported", rf.Type)
	}
}

// parts is the content parts of messages[i] as blocks: text, and images in user messages.
func (m ChatMessage) parts(i int) ([]router.Block, error) {
	if m.Content == nil {
		return nil, nil
	}
	var blocks []router.Block
	for j, p := range m.Content.Parts {
		switch p.Type {
		case "text":
			blocks = append(blocks, router.Block{Text: p.Text})
		case "image_url":
			if p.ImageURL == nil || m.Role != router.RoleUser {
				return nil, fmt.Errorf("messages[%d].content[%d]: image_url only in user messages", i, j)
			}
			img, err := imageFrom(p.ImageURL.URL)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content[%d].image_url: %w", i, j, err)
			}
			img.Detail = p.ImageURL.Detail
			blocks = append(blocks, router.Block{Image: img})
		default:
			return nil, fmt.Errorf("messages[%d].content[%d]: part type %q is not supported (text, image_url)", i, j, p.Type)
		}
	}
	return blocks, nil
}

// imageFrom reads a data: URL's bytes and format; an http(s) URL is kept as a URL.
func imageFrom(u string) (*router.Image, error) {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return &router.Image{URL: u}, nil
	}
	meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok || !strings.HasPrefix(u, "data:") || !strings.HasSuffix(meta, ";base64") {
		return nil, fmt.Errorf("want a data:image/...;base64, URL or an http(s) URL")
	}
	format := strings.TrimPrefix(strings.TrimSuffix(meta, ";base64"), "image/")
	if format == "jpg" {
		format = "jpeg"
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	return &router.Image{Format: format, Data: raw}, nil
}

// ToRouter converts a wire response (the first choice).
func (cr *ChatResponse) ToRouter() (*router.Response, error) {
	ch := cr.Choices[0]
	resp := &router.Response{Model: cr.Model, StopReason: stopReason(ch.FinishReason), Usage: cr.Usage.toRouter(),
		Message: router.Message{Role: router.RoleAssistant}, Logprobs: logprobs(ch.Logprobs),
		SystemFingerprint: cr.SystemFingerprint, ServiceTier: cr.ServiceTier}
	if t := ch.Message.Content.Text(); t != "" {
		resp.Message.Content = append(resp.Message.Content, router.Block{Text: t})
	}
	for _, tc := range ch.Message.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if !json.Valid(args) {
			return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: "tool call " + tc.ID + ": arguments are not JSON"}
		}
		resp.Message.Content = append(resp.Message.Content, router.Block{ToolUse: &router.ToolUse{ID: tc.ID, Name: tc.Function.Name, Input: args}})
	}
	return resp, nil
}

// FromRouterResponse builds the wire response the gateway sends.
func FromRouterResponse(id string, created int64, resp *router.Response) *ChatResponse {
	cr := &ChatResponse{ID: id, Object: "chat.completion", Created: created, Model: resp.Model, Usage: usageFrom(resp.Usage),
		SystemFingerprint: resp.SystemFingerprint, ServiceTier: resp.ServiceTier}
	ch := Choice{FinishReason: finishReason(resp.StopReason), Message: ChatMessage{Role: router.RoleAssistant}, Logprobs: resp.Logprobs}
	var text string
	for _, b := range resp.Message.Content {
		if b.ToolUse != nil {
			var tc ToolCall
			tc.ID, tc.Type = b.ToolUse.ID, "function"
			tc.Function.Name, tc.Function.Arguments = b.ToolUse.Name, string(b.ToolUse.Input)
			ch.Message.ToolCalls = append(ch.Message.ToolCalls, tc)
		} else {
			text += b.Text
		}
	}
	ch.Message.Content = TextContent(text)
	cr.Choices = []Choice{ch}
	return cr
}
