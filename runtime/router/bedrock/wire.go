package bedrock

import (
	"fmt"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock/converse"
)

// The Converse wire format is runtime/router/bedrock/converse; here it meets the router's
// types.

func usageFrom(u router.Usage) converse.Usage {
	return converse.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.Total(), CacheReadInputTokens: u.CacheReadTokens}
}

// ToRouter converts a decoded Converse request.
func ToRouter(c *converse.Request) (*router.Request, error) {
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
func FromRouter(resp *router.Response, latencyMs int64) *converse.Response {
	out := &converse.Response{StopReason: resp.StopReason, Usage: usageFrom(resp.Usage)}
	out.Output.Message = converse.Message{Role: converse.RoleAssistant, Content: wireBlocks(resp.Message.Content)}
	out.Metrics.LatencyMs = latencyMs
	return out
}

func wireBlocks(bs []router.Block) []converse.Block {
	out := make([]converse.Block, 0, len(bs))
	for _, b := range bs {
		switch {
		case b.ToolUse != nil:
			out = append(out, converse.Block{ToolUse: &converse.ToolUse{ToolUseID: b.ToolUse.ID, Name: b.ToolUse.Name, Input: b.ToolUse.Input}})
		default:
			t := b.Text
			out = append(out, converse.Block{Text: &t})
		}
	}
	return out
}
