// Package converse is the Bedrock Runtime Converse REST-JSON wire format (POST
// /model/{modelId}/converse and /converse-stream), as the Bedrock Runtime API reference
// documents it. It imports no router and no SDK: runtime/router/bedrock converts it to and
// from the router's types, and fleetc dev's model stand-in speaks it without linking them.
package converse

import (
	"bytes"
	"encoding/json"
)

// Roles of a Converse message (ConversationRole).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// The Converse REST-JSON wire shapes (POST /model/{modelId}/converse and
// /converse-stream), as the Bedrock Runtime API reference documents them. fleet-worker's
// gateway serves them; the tests' fake Bedrock decodes and answers them. Decoding is
// strict: a field the gateway cannot carry is an error that names it, never dropped.

// Request is the request body.
type Request struct {
	Messages        []Message        `json:"messages"`
	System          []Text           `json:"system,omitempty"`
	InferenceConfig *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *ToolConfig      `json:"toolConfig,omitempty"`
}

// DecodeRequest reads a request body strictly.
func DecodeRequest(body []byte) (*Request, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var c Request
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// InferenceConfig is inferenceConfig.
type InferenceConfig struct {
	MaxTokens     int      `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolSpec is a toolSpec.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// ToolConfig is toolConfig.
type ToolConfig struct {
	Tools []struct {
		ToolSpec ToolSpec `json:"toolSpec"`
	} `json:"tools"`
	ToolChoice *struct {
		Auto *struct{} `json:"auto,omitempty"`
		Any  *struct{} `json:"any,omitempty"`
		Tool *struct {
			Name string `json:"name"`
		} `json:"tool,omitempty"`
	} `json:"toolChoice,omitempty"`
}

// Text is a {"text": …} block.
type Text struct {
	Text string `json:"text"`
}

// Message is one message.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Image is an image block; Bytes is base64 on the wire.
type Image struct {
	Format string `json:"format"`
	Source struct {
		Bytes []byte `json:"bytes"`
	} `json:"source"`
}

// Block is a content block: text, image, toolUse or toolResult.
type Block struct {
	Text       *string     `json:"text,omitempty"`
	Image      *Image      `json:"image,omitempty"`
	ToolUse    *ToolUse    `json:"toolUse,omitempty"`
	ToolResult *ToolResult `json:"toolResult,omitempty"`
}

// ToolUse is toolUse.
type ToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResult is toolResult; each content item is text or json.
type ToolResult struct {
	ToolUseID string `json:"toolUseId"`
	Content   []struct {
		Text *string         `json:"text,omitempty"`
		JSON json.RawMessage `json:"json,omitempty"`
	} `json:"content"`
	Status string `json:"status,omitempty"`
}

// Usage is usage.
type Usage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens,omitempty"`
}

// Response is the response body.
type Response struct {
	Output struct {
		Message Message `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      Usage  `json:"usage"`
	Metrics    struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics"`
}
