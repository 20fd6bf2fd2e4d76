// Package bedrock is the router's Amazon Bedrock provider: one Converse call per Chat,
// through aws-sdk-go-v2/service/bedrockruntime with SDK retries off (the router is the
// one retry layer). Errors come back as *router.ProviderError with the HTTP status, the
// error code (X-Amzn-ErrorType) and any Retry-After.
package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

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
	ConverseStream(ctx context.Context, in *bedrockruntime.ConverseStreamInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error)
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
		// The worker signs with its role. AWS_BEARER_TOKEN_BEDROCK, which the SDK reads
		// on its own, is what a handler sets to reach the local gateway: never sent upstream.
		o.BearerAuthTokenProvider, o.AuthSchemePreference = nil, nil
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
		return nil, &router.ProviderError{Status: 400, Code: "ValidationException", Message: err.Error()}
	}
	out, err := p.API.Converse(ctx, in)
	if err != nil {
		return nil, providerError(err)
	}
	resp, err := fromOutput(model, out)
	if err != nil {
		return nil, err
	}
	if req.ResponseFormat != nil {
		unforce(resp)
	}
	return resp, nil
}

// ChatStream makes one ConverseStream call. The SDK builds, signs and sends the request
// and reads an error answer; the event stream itself is read by EventReader: the SDK's
// own stream reader (bedrockruntime v1.63) lost the connection under its last events in
// about 1 of 100 streams here ("use of closed network connection").
func (p *Provider) ChatStream(ctx context.Context, model string, req *router.Request) (router.Stream, error) {
	in, err := converseInput(model, req)
	if err != nil {
		return nil, &router.ProviderError{Status: 400, Code: "ValidationException", Message: err.Error()}
	}
	var tap bodyTap
	_, err = p.API.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: in.ModelId, Messages: in.Messages,
		System: in.System, InferenceConfig: in.InferenceConfig, ToolConfig: in.ToolConfig}, func(o *bedrockruntime.Options) {
		tap.next = o.HTTPClient
		o.HTTPClient = &tap
	})
	if err != nil {
		if tap.body != nil {
			tap.body.Close()
		}
		return nil, providerError(err)
	}
	if tap.body == nil {
		return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: "ConverseStream answered without a body"}
	}
	r := NewEventReader(tap.body)
	r.forced = req.ResponseFormat != nil
	return r, nil
}

// bodyTap keeps a successful answer's body for EventReader and gives the SDK an empty one.
type bodyTap struct {
	next bedrockruntime.HTTPClient
	body io.ReadCloser
}

// Do sends r with a body of its own: smithy closes the request body it built as soon as
// Do returns, and when that close races the transport finishing the request, the
// transport drops the connection under the streamed answer ("use of closed network
// connection" mid-stream, about 1 stream in 150 against a local server).
func (t *bodyTap) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := t.next.Do(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	t.body = resp.Body
	resp.Body = http.NoBody
	return resp, nil
}

// jsonTool is the forced tool a response_format becomes on Bedrock (no Converse field
// asks for JSON output): its input schema is the requested schema, and its input is
// handed back as the answer's text.
const jsonTool = "json_response"

// unforce turns the forced tool call back into the JSON text the caller asked for.
func unforce(resp *router.Response) {
	for i, b := range resp.Message.Content {
		if b.ToolUse != nil && b.ToolUse.Name == jsonTool {
			resp.Message.Content = []router.Block{{Text: string(resp.Message.Content[i].ToolUse.Input)}}
			resp.StopReason = router.StopEndTurn
			return
		}
	}
}

func toDocument(raw json.RawMessage, what string) (document.Interface, error) {
	var v any = map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return document.NewLazyDocument(v), nil
}

// converseInput is req as a Converse request. A field Converse has no counterpart for is
// refused, not dropped: the caller asked for it.
func converseInput(model string, req *router.Request) (*bedrockruntime.ConverseInput, error) {
	if len(req.Extra) > 0 {
		names := make([]string, 0, len(req.Extra))
		for k := range req.Extra {
			names = append(names, k)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("field(s) %s have no Bedrock Converse counterpart", strings.Join(names, ", "))
	}
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(model), InferenceConfig: inferenceConfig(req)}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	var err error
	if in.ToolConfig, err = toolConfig(req); err != nil {
		return nil, err
	}
	for _, m := range req.Messages {
		msg := types.Message{Role: types.ConversationRole(m.Role)}
		for _, b := range m.Content {
			block, err := contentBlock(b)
			if err != nil {
				return nil, err
			}
			msg.Content = append(msg.Content, block)
		}
		in.Messages = append(in.Messages, msg)
	}
	return in, nil
}

// inferenceConfig is the sampling part of req, or nil when it sets none (the model's
// defaults apply).
func inferenceConfig(req *router.Request) *types.InferenceConfiguration {
	if req.MaxTokens <= 0 && req.Temperature == nil && req.TopP == nil && len(req.Stop) == 0 {
		return nil
	}
	ic := &types.InferenceConfiguration{StopSequences: req.Stop}
	if req.MaxTokens > 0 {
		ic.MaxTokens = aws.Int32(int32(req.MaxTokens))
	}
	if req.Temperature != nil {
		ic.Temperature = aws.Float32(float32(*req.Temperature))
	}
	if req.TopP != nil {
		ic.TopP = aws.Float32(float32(*req.TopP))
	}
	return ic
}

// toolConfig is req's tools and tool choice, or nil without tools. Converse has no
// response_format: a JSON answer is asked for as a call of one forced tool whose input
// schema is the format's.
func toolConfig(req *router.Request) (*types.ToolConfiguration, error) {
	tools := req.Tools
	choice := req.ToolChoice
	if rf := req.ResponseFormat; rf != nil {
		if choice.Type != "" && len(req.Tools) > 0 {
			return nil, fmt.Errorf("response_format together with tool_choice: a Bedrock target answers JSON through a forced tool")
		}
		schema := rf.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tools = append(slices.Clip(tools), router.Tool{Name: jsonTool, Description: "Answer with a JSON value matching this schema.", Schema: schema})
		choice = router.ToolChoice{Type: router.ToolChoiceSpecific, Name: jsonTool}
	}
	var tc *types.ToolConfiguration
	for _, t := range tools {
		schema, err := toDocument(t.Schema, "tool "+t.Name+": input schema")
		if err != nil {
			return nil, err
		}
		if len(t.Schema) == 0 {
			schema = document.NewLazyDocument(map[string]any{"type": "object"})
		}
		spec := types.ToolSpecification{Name: aws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}
		if t.Description != "" {
			spec.Description = aws.String(t.Description)
		}
		if tc == nil {
			tc = &types.ToolConfiguration{}
		}
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
	}
	switch choice.Type {
	case "":
	case router.ToolChoiceNone:
		return nil, fmt.Errorf("tool_choice none has no Bedrock Converse counterpart (send no tools instead)")
	default:
		if tc == nil {
			return nil, fmt.Errorf("tool_choice without tools")
		}
		switch choice.Type {
		case router.ToolChoiceAuto:
			tc.ToolChoice = &types.ToolChoiceMemberAuto{}
		case router.ToolChoiceAny:
			tc.ToolChoice = &types.ToolChoiceMemberAny{}
		case router.ToolChoiceSpecific:
			tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(choice.Name)}}
		}
	}
	return tc, nil
}

// contentBlock is one block of a message: a tool call, a tool's result (JSON or text), an
// image (bytes only: Converse fetches no URL) or text.
func contentBlock(b router.Block) (types.ContentBlock, error) {
	switch {
	case b.ToolUse != nil:
		input, err := toDocument(b.ToolUse.Input, "tool use "+b.ToolUse.ID+": input")
		if err != nil {
			return nil, err
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(b.ToolUse.ID), Name: aws.String(b.ToolUse.Name), Input: input}}, nil
	case b.ToolResult != nil:
		r := types.ToolResultBlock{ToolUseId: aws.String(b.ToolResult.ID)}
		if len(b.ToolResult.JSON) > 0 {
			doc, err := toDocument(b.ToolResult.JSON, "tool result "+b.ToolResult.ID)
			if err != nil {
				return nil, err
			}
			r.Content = []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberJson{Value: doc}}
		} else {
			r.Content = []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: b.ToolResult.Content}}
		}
		if b.ToolResult.IsError {
			r.Status = types.ToolResultStatusError
		}
		return &types.ContentBlockMemberToolResult{Value: r}, nil
	case b.Image != nil:
		if len(b.Image.Data) == 0 {
			return nil, fmt.Errorf("image_url %q: a Bedrock target takes image bytes (a data: URL), not a URL", b.Image.URL)
		}
		return &types.ContentBlockMemberImage{Value: types.ImageBlock{
			Format: types.ImageFormat(b.Image.Format), Source: &types.ImageSourceMemberBytes{Value: b.Image.Data}}}, nil
	default:
		return &types.ContentBlockMemberText{Value: b.Text}, nil
	}
}

func fromOutput(model string, out *bedrockruntime.ConverseOutput) (*router.Response, error) {
	resp := &router.Response{Model: model, StopReason: string(out.StopReason), Message: router.Message{Role: router.RoleAssistant}}
	if out.Usage != nil {
		resp.Usage = usageOf(out.Usage)
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
			// The document's own JSON: decoding it into any turns numbers into
			// document.Number, which would re-encode as strings.
			raw := []byte("{}")
			if v.Value.Input != nil {
				var err error
				if raw, err = v.Value.Input.MarshalSmithyDocument(); err != nil {
					return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: "tool use input: " + err.Error()}
				}
			}
			resp.Message.Content = append(resp.Message.Content, router.Block{ToolUse: &router.ToolUse{
				ID: aws.ToString(v.Value.ToolUseId), Name: aws.ToString(v.Value.Name), Input: raw}})
		}
	}
	return resp, nil
}

func usageOf(u *types.TokenUsage) router.Usage {
	return router.Usage{InputTokens: int(aws.ToInt32(u.InputTokens)), OutputTokens: int(aws.ToInt32(u.OutputTokens)),
		CacheReadTokens: int(aws.ToInt32(u.CacheReadInputTokens))}
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
