package bedrock

import (
	"encoding/json"

	"github.com/fleetc/fleetc/runtime/router"
)

// The Converse REST-JSON wire shapes (POST /model/{modelId}/converse), as the Bedrock
// Runtime API reference documents them. fleet-worker's gateway serves them to handlers
// that speak Converse; the tests' fake Bedrock decodes and answers them.

// ConverseRequest is the request body.
type ConverseRequest struct {
	Messages        []WireMessage    `json:"messages"`
	System          []WireText       `json:"system,omitempty"`
	InferenceConfig *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *ToolConfig      `json:"toolConfig,omitempty"`
}

// InferenceConfig is inferenceConfig.
type InferenceConfig struct {
	MaxTokens   int      `json:"maxTokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
}

// ToolConfig is toolConfig.
type ToolConfig struct {
	Tools []struct {
		ToolSpec struct {
			Name        string `json:"name"`
			Description string `json:"description,omitempty"`
			InputSchema struct {
				JSON json.RawMessage `json:"json"`
			} `json:"inputSchema"`
		} `json:"toolSpec"`
	} `json:"tools"`
}

// WireText is a {"text": …} block.
type WireText struct {
	Text string `json:"text"`
}

// WireMessage is one message.
type WireMessage struct {
	Role    string      `json:"role"`
	Content []WireBlock `json:"content"`
}

// WireBlock is a content block: text, toolUse or toolResult.
type WireBlock struct {
	Text       *string         `json:"text,omitempty"`
	ToolUse    *WireToolUse    `json:"toolUse,omitempty"`
	ToolResult *WireToolResult `json:"toolResult,omitempty"`
}

// WireToolUse is toolUse.
type WireToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// WireToolResult is toolResult.
type WireToolResult struct {
	ToolUseID string     `json:"toolUseId"`
	Content   []WireText `json:"content"`
	Status    string     `json:"status,omitempty"`
}

// ConverseResponse is the response body.
type ConverseResponse struct {
	Output struct {
		Message WireMessage `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      struct {
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
		TotalTokens  int `json:"totalTokens"`
	} `json:"usage"`
	Metrics struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics"`
}

// ToRouter converts a decoded Converse request.
func (c *ConverseRequest) ToRouter() *router.Request {
	r := &router.Request{}
	for _, s := range c.System {
		r.System += s.Text
	}
	if c.InferenceConfig != nil {
		r.MaxTokens, r.Temperature = c.InferenceConfig.MaxTokens, c.InferenceConfig.Temperature
	}
	if c.ToolConfig != nil {
		for _, t := range c.ToolConfig.Tools {
			r.Tools = append(r.Tools, router.Tool{Name: t.ToolSpec.Name, Description: t.ToolSpec.Description, Schema: t.ToolSpec.InputSchema.JSON})
		}
	}
	for _, m := range c.Messages {
		msg := router.Message{Role: m.Role}
		for _, b := range m.Content {
			switch {
			case b.ToolUse != nil:
				msg.Content = append(msg.Content, router.Block{ToolUse: &router.ToolUse{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Input: b.ToolUse.Input}})
			case b.ToolResult != nil:
				var text string
				for _, t := range b.ToolResult.Content {
					text += t.Text
				}
				msg.Content = append(msg.Content, router.Block{ToolResult: &router.ToolResult{ID: b.ToolResult.ToolUseID, Content: text, IsError: b.ToolResult.Status == "error"}})
			case b.Text != nil:
				msg.Content = append(msg.Content, router.Block{Text: *b.Text})
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	return r
}

// FromRouter builds a Converse response.
func FromRouter(resp *router.Response, latencyMs int64) *ConverseResponse {
	out := &ConverseResponse{StopReason: resp.StopReason}
	out.Output.Message = WireMessage{Role: router.RoleAssistant, Content: wireBlocks(resp.Message.Content)}
	out.Usage.InputTokens, out.Usage.OutputTokens = resp.Usage.InputTokens, resp.Usage.OutputTokens
	out.Usage.TotalTokens = resp.Usage.Total()
	out.Metrics.LatencyMs = latencyMs
	return out
}

func wireBlocks(bs []router.Block) []WireBlock {
	out := make([]WireBlock, 0, len(bs))
	for _, b := range bs {
		switch {
		case b.ToolUse != nil:
			out = append(out, WireBlock{ToolUse: &WireToolUse{ToolUseID: b.ToolUse.ID, Name: b.ToolUse.Name, Input: b.ToolUse.Input}})
		case b.ToolResult != nil:
			st := ""
			if b.ToolResult.IsError {
				st = "error"
			}
			out = append(out, WireBlock{ToolResult: &WireToolResult{ToolUseID: b.ToolResult.ID, Content: []WireText{{Text: b.ToolResult.Content}}, Status: st}})
		default:
			t := b.Text
			out = append(out, WireBlock{Text: &t})
		}
	}
	return out
}
