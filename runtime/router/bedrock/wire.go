package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fleetc/fleetc/runtime/router"
)

// The Converse REST-JSON wire shapes (POST /model/{modelId}/converse and
// /converse-stream), as the Bedrock Runtime API reference documents them. fleet-worker's
// gateway serves them; the tests' fake Bedrock decodes and answers them. Decoding is
// strict: a field the gateway cannot carry is an error that names it, never dropped.

// ConverseRequest is the request body.
type ConverseRequest struct {
	Messages        []WireMessage    `json:"messages"`
	System          []WireText       `json:"system,omitempty"`
	InferenceConfig *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *ToolConfig      `json:"toolConfig,omitempty"`
}

// DecodeRequest reads a request body strictly.
func DecodeRequest(body []byte) (*ConverseRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var c ConverseRequest
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

// WireToolSpec is a toolSpec.
type WireToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// ToolConfig is toolConfig.
type ToolConfig struct {
	Tools []struct {
		ToolSpec WireToolSpec `json:"toolSpec"`
	} `json:"tools"`
	ToolChoice *struct {
		Auto *struct{} `json:"auto,omitempty"`
		Any  *struct{} `json:"any,omitempty"`
		Tool *struct {
			Name string `json:"name"`
		} `json:"tool,omitempty"`
	} `json:"toolChoice,omitempty"`
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

// WireImage is an image block; Bytes is base64 on the wire.
type WireImage struct {
	Format string `json:"format"`
	Source struct {
		Bytes []byte `json:"bytes"`
	} `json:"source"`
}

// WireBlock is a content block: text, image, toolUse or toolResult.
type WireBlock struct {
	Text       *string         `json:"text,omitempty"`
	Image      *WireImage      `json:"image,omitempty"`
	ToolUse    *WireToolUse    `json:"toolUse,omitempty"`
	ToolResult *WireToolResult `json:"toolResult,omitempty"`
}

// WireToolUse is toolUse.
type WireToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// WireToolResult is toolResult; each content item is text or json.
type WireToolResult struct {
	ToolUseID string `json:"toolUseId"`
	Content   []struct {
		Text *string         `json:"text,omitempty"`
		JSON json.RawMessage `json:"json,omitempty"`
	} `json:"content"`
	Status string `json:"status,omitempty"`
}

// WireUsage is usage.
type WireUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens,omitempty"`
}

func usageFrom(u router.Usage) WireUsage {
	return WireUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.Total(), CacheReadInputTokens: u.CacheReadTokens}
}

// ConverseResponse is the response body.
type ConverseResponse struct {
	Output struct {
		Message WireMessage `json:"message"`
	} `json:"output"`
	StopReason string    `json:"stopReason"`
	Usage      WireUsage `json:"usage"`
	Metrics    struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics"`
}

// ToRouter converts a decoded Converse request.
func (c *ConverseRequest) ToRouter() (*router.Request, error) {
	r := &router.Request{}
	for _, s := range c.System {
		r.System += s.Text
	}
	if ic := c.InferenceConfig; ic != nil {
		r.MaxTokens, r.Temperature, r.TopP, r.Stop = ic.MaxTokens, ic.Temperature, ic.TopP, ic.StopSequences
	}
	if tc := c.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			r.Tools = append(r.Tools, router.Tool{Name: t.ToolSpec.Name, Description: t.ToolSpec.Description, Schema: t.ToolSpec.InputSchema.JSON})
		}
		if ch := tc.ToolChoice; ch != nil {
			switch {
			case ch.Auto != nil:
				r.ToolChoice.Type = router.ToolChoiceAuto
			case ch.Any != nil:
				r.ToolChoice.Type = router.ToolChoiceAny
			case ch.Tool != nil:
				r.ToolChoice = router.ToolChoice{Type: router.ToolChoiceSpecific, Name: ch.Tool.Name}
			default:
				return nil, fmt.Errorf("toolConfig.toolChoice: want auto, any or tool")
			}
		}
	}
	for i, m := range c.Messages {
		msg := router.Message{Role: m.Role}
		for j, b := range m.Content {
			switch {
			case b.ToolUse != nil:
				msg.Content = append(msg.Content, router.Block{ToolUse: &router.ToolUse{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Input: b.ToolUse.Input}})
			case b.ToolResult != nil:
				tr := &router.ToolResult{ID: b.ToolResult.ToolUseID, IsError: b.ToolResult.Status == "error"}
				for k, item := range b.ToolResult.Content {
					switch {
					case item.Text != nil:
						tr.Content += *item.Text
					case len(item.JSON) > 0 && len(b.ToolResult.Content) == 1:
						tr.JSON = item.JSON
					default:
						return nil, fmt.Errorf("messages[%d].content[%d].toolResult.content[%d]: text, or one json block", i, j, k)
					}
				}
				msg.Content = append(msg.Content, router.Block{ToolResult: tr})
			case b.Image != nil:
				msg.Content = append(msg.Content, router.Block{Image: &router.Image{Format: b.Image.Format, Data: b.Image.Source.Bytes}})
			case b.Text != nil:
				msg.Content = append(msg.Content, router.Block{Text: *b.Text})
			default:
				return nil, fmt.Errorf("messages[%d].content[%d]: an empty content block", i, j)
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	return r, nil
}

// FromRouter builds a Converse response.
func FromRouter(resp *router.Response, latencyMs int64) *ConverseResponse {
	out := &ConverseResponse{StopReason: resp.StopReason, Usage: usageFrom(resp.Usage)}
	out.Output.Message = WireMessage{Role: router.RoleAssistant, Content: wireBlocks(resp.Message.Content)}
	out.Metrics.LatencyMs = latencyMs
	return out
}

func wireBlocks(bs []router.Block) []WireBlock {
	out := make([]WireBlock, 0, len(bs))
	for _, b := range bs {
		switch {
		case b.ToolUse != nil:
			out = append(out, WireBlock{ToolUse: &WireToolUse{ToolUseID: b.ToolUse.ID, Name: b.ToolUse.Name, Input: b.ToolUse.Input}})
		default:
			t := b.Text
			out = append(out, WireBlock{Text: &t})
		}
	}
	return out
}
