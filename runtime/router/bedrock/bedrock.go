// Package bedrock is the router's Amazon Bedrock provider: one Converse call per Chat,
// through aws-sdk-go-v2/service/bedrockruntime with SDK retries off (the router is the
// one retry layer). Errors come back as *router.ProviderError with the HTTP status, the
// error code (X-Amzn-ErrorType) and any Retry-After.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/transport"
)

// API is the part of the Bedrock Runtime client the provider uses.
type API interface {
	Converse(ctx context.Context, in *bedrockruntime.ConverseInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
}

// Provider calls Bedrock Converse.
type Provider struct{ API API }

// NewClient builds a Bedrock Runtime client from cfg with SDK retries off. endpoint
// overrides the service endpoint ("" = the region's Bedrock endpoint); a shared
// endpoint in cfg (an emulator for the other services) is not inherited. hc is the
// provider's pooled client (nil: a pool of transport.DefaultIdle connections).
func NewClient(cfg aws.Config, endpoint string, hc *http.Client) *bedrockruntime.Client {
	if hc == nil {
		hc = transport.New(0)
	}
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.Retryer = aws.NopRetryer{}
		o.HTTPClient = hc
		o.BaseEndpoint = nil
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// System is the OpenTelemetry gen_ai.provider.name.
func (p *Provider) System() string { return "aws.bedrock" }

// Chat makes one Converse call.
func (p *Provider) Chat(ctx context.Context, model string, req *router.Request) (*router.Response, error) {
	in, err := converseInput(model, req)
	if err != nil {
		return nil, &router.ProviderError{Status: 400, Code: "InvalidRequest", Message: err.Error()}
	}
	out, err := p.API.Converse(ctx, in)
	if err != nil {
		return nil, providerError(err)
	}
	return fromOutput(model, out)
}

func converseInput(model string, req *router.Request) (*bedrockruntime.ConverseInput, error) {
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(model)}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	if req.MaxTokens > 0 || req.Temperature != nil {
		in.InferenceConfig = &types.InferenceConfiguration{}
		if req.MaxTokens > 0 {
			in.InferenceConfig.MaxTokens = aws.Int32(int32(req.MaxTokens))
		}
		if req.Temperature != nil {
			in.InferenceConfig.Temperature = aws.Float32(float32(*req.Temperature))
		}
	}
	for _, t := range req.Tools {
		var schema any = map[string]any{"type": "object"}
		if len(t.Schema) > 0 {
			if err := json.Unmarshal(t.Schema, &schema); err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
			}
		}
		spec := types.ToolSpecification{Name: aws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}
		if t.Description != "" {
			spec.Description = aws.String(t.Description)
		}
		if in.ToolConfig == nil {
			in.ToolConfig = &types.ToolConfiguration{}
		}
		in.ToolConfig.Tools = append(in.ToolConfig.Tools, &types.ToolMemberToolSpec{Value: spec})
	}
	for _, m := range req.Messages {
		msg := types.Message{Role: types.ConversationRole(m.Role)}
		for _, b := range m.Content {
			switch {
			case b.ToolUse != nil:
				var input any = map[string]any{}
				if len(b.ToolUse.Input) > 0 {
					if err := json.Unmarshal(b.ToolUse.Input, &input); err != nil {
						return nil, fmt.Errorf("tool use %s: input: %w", b.ToolUse.ID, err)
					}
				}
				msg.Content = append(msg.Content, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
					ToolUseId: aws.String(b.ToolUse.ID), Name: aws.String(b.ToolUse.Name), Input: document.NewLazyDocument(input)}})
			case b.ToolResult != nil:
				r := types.ToolResultBlock{ToolUseId: aws.String(b.ToolResult.ID),
					Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: b.ToolResult.Content}}}
				if b.ToolResult.IsError {
					r.Status = types.ToolResultStatusError
				}
				msg.Content = append(msg.Content, &types.ContentBlockMemberToolResult{Value: r})
			default:
				msg.Content = append(msg.Content, &types.ContentBlockMemberText{Value: b.Text})
			}
		}
		in.Messages = append(in.Messages, msg)
	}
	return in, nil
}

func fromOutput(model string, out *bedrockruntime.ConverseOutput) (*router.Response, error) {
	resp := &router.Response{Model: model, StopReason: string(out.StopReason), Message: router.Message{Role: router.RoleAssistant}}
	if out.Usage != nil {
		resp.Usage = router.Usage{InputTokens: int(aws.ToInt32(out.Usage.InputTokens)), OutputTokens: int(aws.ToInt32(out.Usage.OutputTokens))}
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: fmt.Sprintf("Converse output %T has no message", out.Output)}
	}
	for _, c := range msg.Value.Content {
		switch v := c.(type) {
		case *types.ContentBlockMemberText:
			resp.Message.Content = append(resp.Message.Content, router.Block{Text: v.Value})
		case *types.ContentBlockMemberToolUse:
			var input any
			if v.Value.Input != nil {
				if err := v.Value.Input.UnmarshalSmithyDocument(&input); err != nil {
					return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: "tool use input: " + err.Error()}
				}
			}
			raw, _ := json.Marshal(input)
			resp.Message.Content = append(resp.Message.Content, router.Block{ToolUse: &router.ToolUse{
				ID: aws.ToString(v.Value.ToolUseId), Name: aws.ToString(v.Value.Name), Input: raw}})
		}
	}
	return resp, nil
}

// providerError keeps what the router needs from an SDK error: status, code, retry-after.
func providerError(err error) error {
	pe := &router.ProviderError{Err: err}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		pe = router.FromHTTP(re.HTTPStatusCode(), re.Response.Header, "", "")
		pe.Err = err
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		pe.Code, pe.Message = ae.ErrorCode(), ae.ErrorMessage()
	}
	classifyCode(pe)
	return pe
}

// classifyCode applies what the Converse API reference says of each error code.
func classifyCode(pe *router.ProviderError) {
	switch pe.Code {
	case "ThrottlingException", "ModelNotReadyException":
		// Bedrock's own rate limit (no spend limits on Bedrock): retried, with full
		// jitter when no Retry-After came.
		pe.RateLimited = true
	case "ServiceQuotaExceededException", "ModelErrorException":
		// "You can resubmit your request later" (quota) and "an error while processing
		// the model" (424): another attempt or another group can answer.
		pe.Transient = true
	case "ValidationException":
		pe.ContextWindow = router.ContextWindowMessage(pe.Message)
	}
}
