// Package router is fleet-worker's model router: the one retry layer for model calls.
//
// A Policy is a group of interchangeable deployments (in-group targets) with bounded
// in-group retries, a per-call timeout, a failure budget (allowed_fails within a window,
// then a cooldown for that deployment), a concurrency cap (max_in_flight) and a token
// bucket (tokens_per_minute, charged with the usage each response reports). When a group
// cannot answer, the router leaves the failure domain: it tries the ordered cross-group
// fallbacks, each gated by its own cap and bucket, so overflow cannot stampede them.
//
// The package has its own types; runtime/router/fromconfig maps a runtime config onto
// them. Providers (Bedrock Converse, OpenAI-compatible chat completions) live in
// subpackages and never retry on their own.
package router

import (
	"encoding/json"
	"strings"
	"time"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Stop reasons: Bedrock Converse's stopReason values, the router's vocabulary. OpenAI's
// finish_reason is mapped onto them and back (runtime/router/openai, docs/model-gateway.md).
const (
	StopEndTurn              = "end_turn"
	StopToolUse              = "tool_use"
	StopMaxTokens            = "max_tokens"
	StopSequence             = "stop_sequence"
	StopGuardrail            = "guardrail_intervened"
	StopContentFiltered      = "content_filtered"
	StopMalformedOutput      = "malformed_model_output"
	StopMalformedToolUse     = "malformed_tool_use"
	StopContextWindowReached = "model_context_window_exceeded"
)

// Message is one conversation turn.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block: exactly one of Text, Image, ToolUse, ToolResult.
type Block struct {
	Text       string      `json:"text,omitempty"`
	Image      *Image      `json:"image,omitempty"`
	ToolUse    *ToolUse    `json:"tool_use,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
}

// Image is an image input: its bytes and format (png, jpeg, gif, webp), or a URL only an
// OpenAI-compatible target can fetch (a Bedrock target refuses it).
type Image struct {
	Format string `json:"format,omitempty"`
	Data   []byte `json:"data,omitempty"`
	URL    string `json:"url,omitempty"`
	Detail string `json:"detail,omitempty"` // OpenAI's detail hint
}

// ToolUse is the model asking for a tool call.
type ToolUse struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResult answers a ToolUse: text, or a JSON value (Converse's json block; sent as
// its text to OpenAI-compatible targets).
type ToolResult struct {
	ID      string          `json:"id"`
	Content string          `json:"content"`
	JSON    json.RawMessage `json:"json,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

// Text is the result as text: Content, or the JSON value's text.
func (t *ToolResult) Text() string {
	if len(t.JSON) > 0 {
		return string(t.JSON)
	}
	return t.Content
}

// Tool is a tool the model may call; Schema is a JSON Schema object for its input.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
}

// Tool choices (Converse's auto / any / tool; OpenAI's auto / required / a function).
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceAny      = "any"  // the model must call some tool (OpenAI "required")
	ToolChoiceNone     = "none" // no tool call (OpenAI only; a Bedrock target gets no tools)
	ToolChoiceSpecific = "tool" // the model must call ToolChoice.Name
)

// ToolChoice constrains tool calls; the zero value is the provider's default.
type ToolChoice struct {
	Type string
	Name string // for ToolChoiceSpecific
}

// ResponseFormat asks for JSON output: Schema (with Name) for a JSON Schema, or any JSON
// object when Schema is empty. OpenAI-compatible targets get response_format; a Bedrock
// target gets a forced tool whose input schema is Schema, and its input comes back as text.
type ResponseFormat struct {
	Name   string
	Schema json.RawMessage
	Strict bool
}

// Request is one chat call, provider-neutral.
type Request struct {
	System         string
	Messages       []Message
	Tools          []Tool
	ToolChoice     ToolChoice
	ResponseFormat *ResponseFormat
	MaxTokens      int      // 0 = provider default
	Temperature    *float64 // nil = provider default
	TopP           *float64
	Stop           []string
	// Extra are OpenAI request fields with no Converse counterpart (seed, penalties,
	// user, ...), passed to an OpenAI-compatible target as they came; a Bedrock target
	// refuses a request that carries any, naming them.
	Extra map[string]json.RawMessage
}

// Usage is what the provider reports; the token bucket is charged with it.
type Usage struct {
	InputTokens     int
	OutputTokens    int
	CacheReadTokens int // part of InputTokens served from the prompt cache
	ReasoningTokens int // part of OutputTokens spent reasoning (OpenAI's reasoning_tokens)
	// PromptDetails and CompletionDetails are an OpenAI-compatible target's
	// prompt_tokens_details and completion_tokens_details objects (JSON) as they came,
	// passed back whole to OpenAI-shaped clients; "" when the target sent none.
	PromptDetails, CompletionDetails string
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Response is one chat answer.
type Response struct {
	Model      string // the model that answered (response model id)
	Message    Message
	StopReason string
	Usage      Usage
	// Logprobs is an OpenAI-compatible target's logprobs object (the choice's), passed
	// back to OpenAI-shaped clients; nil when it sent none.
	Logprobs json.RawMessage
	// SystemFingerprint and ServiceTier are an OpenAI-compatible target's answer fields
	// of those names (no Converse counterpart), passed back as they came.
	SystemFingerprint, ServiceTier string
	// Set by the router: which policy and deployment answered.
	Policy     string
	Deployment string
}

// Text concatenates the text blocks of the answer.
func (r *Response) Text() string {
	var s strings.Builder
	for _, b := range r.Message.Content {
		s.WriteString(b.Text)
	}
	return s.String()
}

// ToolUses lists the tool calls the answer asks for.
func (r *Response) ToolUses() []*ToolUse {
	var out []*ToolUse
	for _, b := range r.Message.Content {
		if b.ToolUse != nil {
			out = append(out, b.ToolUse)
		}
	}
	return out
}

// Deployment is one in-group target: a model on a provider.
type Deployment struct {
	Name     string // the target as written in fleet.yaml, e.g. "bedrock/us.anthropic.claude-haiku-4-5"
	Model    string // the provider's model id
	Provider Provider
}

// Policy is one routing group.
type Policy struct {
	Name        string
	Deployments []Deployment
	// Fallbacks are other policies, tried in order (and their own fallbacks after them)
	// when this group cannot answer.
	Fallbacks []string
	// ContextWindowFallbacks are tried instead when a deployment says the input does
	// not fit its context window; empty = such a call fails for good.
	ContextWindowFallbacks []string
	Retries                int           // in-group retries after the first attempt
	Timeout                time.Duration // per call; the step deadline bounds it too
	AllowedFails           int           // failures within FailWindow a deployment may have
	FailWindow             time.Duration // default 60 s
	Cooldown               time.Duration // how long a deployment over AllowedFails is benched
	MaxInFlight            int           // concurrent calls into this group per process; 0 = no cap
	TokensPerMinute        int           // token bucket per process; 0 = no budget
	BackoffBase            time.Duration // full jitter between in-group attempts; default 100 ms
	BackoffCap             time.Duration // default 2 s
}
