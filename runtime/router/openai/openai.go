// Package openai is the router's OpenAI-compatible chat-completions provider (OpenAI,
// a LiteLLM proxy, vLLM, local servers) and the wire shapes fleet-worker's gateway
// serves. One POST {base_url}/chat/completions per Chat; no retries of its own.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fleetc/fleetc/runtime/router"
)

// Client calls one OpenAI-compatible endpoint.
type Client struct {
	BaseURL string // e.g. https://api.openai.com/v1 (no trailing /chat/completions)
	APIKey  string // sent as a bearer token when set; read from the environment, never the spec
	HTTP    *http.Client
}

// System is the OpenTelemetry gen_ai.provider.name.
func (c *Client) System() string { return "openai" }

// Chat makes one chat-completions call.
func (c *Client) Chat(ctx context.Context, model string, req *router.Request) (*router.Response, error) {
	body, err := json.Marshal(FromRouterRequest(model, req))
	if err != nil {
		return nil, &router.ProviderError{Status: 400, Code: "InvalidRequest", Message: err.Error()}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, &router.ProviderError{Status: 400, Code: "InvalidRequest", Message: err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		return nil, &router.ProviderError{Err: err}
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(hresp.Body, 32<<20))
	if err != nil {
		return nil, &router.ProviderError{Err: err}
	}
	if hresp.StatusCode/100 != 2 {
		return nil, errorFrom(hresp.StatusCode, hresp.Header, raw)
	}
	var cr ChatResponse
	if err := json.Unmarshal(raw, &cr); err != nil || len(cr.Choices) == 0 {
		return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: fmt.Sprintf("chat completion without choices: %s", truncate(string(raw), 256))}
	}
	return cr.ToRouter()
}

// errorFrom reads an error answer: OpenAI's {"error":{message,type,code}}, vLLM's (code
// a number, or the fields at the top level) and LiteLLM's (the upstream's class name in
// the message) alike.
func errorFrom(status int, h http.Header, raw []byte) *router.ProviderError {
	var eb struct {
		Error   *wireError `json:"error"`
		Message string     `json:"message"`
		Type    string     `json:"type"`
		Code    any        `json:"code"`
	}
	_ = json.Unmarshal(raw, &eb)
	we := wireError{Message: eb.Message, Type: eb.Type, Code: eb.Code}
	if eb.Error != nil {
		we = *eb.Error
	}
	code, _ := we.Code.(string)
	pe := router.FromHTTP(status, h, code, we.Message)
	if pe.Code == "" {
		pe.Code = we.Type
	}
	if pe.Message == "" {
		pe.Message = truncate(string(raw), 512)
	}
	// A 429 OpenAI names a rate limit (requests or tokens per minute) clears by itself:
	// retried or fallen back even without Retry-After. Only insufficient_quota (and a
	// 429 that names nothing) is the spend limit.
	pe.RateLimited = status == http.StatusTooManyRequests && (code == "rate_limit_exceeded" || we.Type == "requests" || we.Type == "tokens")
	pe.ContextWindow = status == http.StatusBadRequest && (router.ContextWindowMessage(code) || router.ContextWindowMessage(we.Message))
	return pe
}

type wireError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"` // a string at OpenAI, a number at vLLM
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// ChatRequest is the chat-completions request body (the fields fleet uses).
type ChatRequest struct {
	Model       string        `json:"model"`
	Messages    []ChatMessage `json:"messages"`
	Tools       []ChatTool    `json:"tools,omitempty"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Temperature *float64      `json:"temperature,omitempty"`
}

// ChatMessage is one message; Content is a string (or null for a tool-calling turn).
type ChatMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
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
	} `json:"function"`
}

// ChatResponse is the chat-completions response body.
type ChatResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int         `json:"index"`
		Message      ChatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// ErrorBody is the error envelope.
type ErrorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

var finishToStop = map[string]string{"stop": router.StopEndTurn, "tool_calls": router.StopToolUse, "length": router.StopMaxTokens}
var stopToFinish = map[string]string{router.StopEndTurn: "stop", router.StopToolUse: "tool_calls", router.StopMaxTokens: "length"}

// FromRouterRequest builds the wire request.
func FromRouterRequest(model string, req *router.Request) *ChatRequest {
	cr := &ChatRequest{Model: model, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	if req.System != "" {
		s := req.System
		cr.Messages = append(cr.Messages, ChatMessage{Role: "system", Content: &s})
	}
	for _, t := range req.Tools {
		var ct ChatTool
		ct.Type = "function"
		ct.Function.Name, ct.Function.Description, ct.Function.Parameters = t.Name, t.Description, t.Schema
		cr.Tools = append(cr.Tools, ct)
	}
	for _, m := range req.Messages {
		var text string
		var hasText bool
		var calls []ToolCall
		for _, b := range m.Content {
			switch {
			case b.ToolResult != nil:
				c := b.ToolResult.Content
				cr.Messages = append(cr.Messages, ChatMessage{Role: "tool", ToolCallID: b.ToolResult.ID, Content: &c})
			case b.ToolUse != nil:
				var tc ToolCall
				tc.ID, tc.Type = b.ToolUse.ID, "function"
				tc.Function.Name, tc.Function.Arguments = b.ToolUse.Name, string(b.ToolUse.Input)
				calls = append(calls, tc)
			default:
				text += b.Text
				hasText = true
			}
		}
		if hasText || len(calls) > 0 {
			msg := ChatMessage{Role: m.Role, ToolCalls: calls}
			if hasText {
				msg.Content = &text
			}
			cr.Messages = append(cr.Messages, msg)
		}
	}
	return cr
}

// ToRouter converts a wire request (the gateway's input).
func (cr *ChatRequest) ToRouter() *router.Request {
	r := &router.Request{MaxTokens: cr.MaxTokens, Temperature: cr.Temperature}
	for _, t := range cr.Tools {
		r.Tools = append(r.Tools, router.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
	}
	for _, m := range cr.Messages {
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch m.Role {
		case "system", "developer":
			r.System += text
		case "tool":
			r.Messages = append(r.Messages, router.Message{Role: router.RoleUser, Content: []router.Block{{ToolResult: &router.ToolResult{ID: m.ToolCallID, Content: text}}}})
		default:
			msg := router.Message{Role: m.Role}
			if text != "" || len(m.ToolCalls) == 0 {
				msg.Content = append(msg.Content, router.Block{Text: text})
			}
			for _, tc := range m.ToolCalls {
				msg.Content = append(msg.Content, router.Block{ToolUse: &router.ToolUse{ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(tc.Function.Arguments)}})
			}
			r.Messages = append(r.Messages, msg)
		}
	}
	return r
}

// ToRouter converts a wire response (the first choice).
func (cr *ChatResponse) ToRouter() (*router.Response, error) {
	ch := cr.Choices[0]
	resp := &router.Response{Model: cr.Model, StopReason: finishToStop[ch.FinishReason],
		Usage:   router.Usage{InputTokens: cr.Usage.PromptTokens, OutputTokens: cr.Usage.CompletionTokens},
		Message: router.Message{Role: router.RoleAssistant}}
	if resp.StopReason == "" {
		resp.StopReason = ch.FinishReason
	}
	if ch.Message.Content != nil && *ch.Message.Content != "" {
		resp.Message.Content = append(resp.Message.Content, router.Block{Text: *ch.Message.Content})
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
	cr := &ChatResponse{ID: id, Object: "chat.completion", Created: created, Model: resp.Model}
	cr.Choices = make([]struct {
		Index        int         `json:"index"`
		Message      ChatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	}, 1)
	ch := &cr.Choices[0]
	ch.FinishReason = stopToFinish[resp.StopReason]
	if ch.FinishReason == "" {
		ch.FinishReason = resp.StopReason
	}
	ch.Message.Role = router.RoleAssistant
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
	ch.Message.Content = &text
	cr.Usage.PromptTokens, cr.Usage.CompletionTokens, cr.Usage.TotalTokens = resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.Total()
	return cr
}
