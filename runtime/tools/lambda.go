package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Lambda shapes the function answers (one function, three callers):
//   - Bedrock Agents action groups defined with function details: the event names the
//     action group and function, with the arguments as typed name/value parameters; the
//     session is the agent session, the principal sessionAttributes.principalId (set by the
//     application that calls InvokeAgent);
//   - AgentCore Gateway Lambda targets: the event is the bare arguments, the tool name
//     (prefixed with the target's name) is the client context's bedrockAgentCoreToolName;
//   - the function URL (AWS_IAM): an HTTP request, served by Handler (HTTP+JSON and MCP),
//     the principal the IAM identity that signed it (urlPrincipal).

// PrincipalAttribute is the Bedrock session attribute naming the end user.
const PrincipalAttribute = "principalId"

// Gateway client-context keys (AgentCore Gateway Lambda targets).
const (
	gatewayToolKey    = "bedrockAgentCoreToolName"
	gatewayIDKey      = "bedrockAgentCoreGatewayId"
	gatewaySessionKey = "bedrockAgentCoreSessionId"
)

// BedrockEvent is a Bedrock Agents action group input event (function details).
type BedrockEvent struct {
	MessageVersion          string            `json:"messageVersion"`
	ActionGroup             string            `json:"actionGroup"`
	Function                string            `json:"function"`
	Parameters              []BedrockParam    `json:"parameters"`
	SessionID               string            `json:"sessionId"`
	SessionAttributes       map[string]string `json:"sessionAttributes"`
	PromptSessionAttributes map[string]string `json:"promptSessionAttributes"`
}

// BedrockParam is one function parameter, its value always a string.
type BedrockParam struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// BedrockResponse is the action group's answer: the tool's Answer as the TEXT body;
// a failed call is responseState FAILURE (REPROMPT for arguments the model can fix).
type BedrockResponse struct {
	MessageVersion          string            `json:"messageVersion"`
	Response                bedrockFnResponse `json:"response"`
	SessionAttributes       map[string]string `json:"sessionAttributes,omitempty"`
	PromptSessionAttributes map[string]string `json:"promptSessionAttributes,omitempty"`
}

type bedrockFnResponse struct {
	ActionGroup      string          `json:"actionGroup"`
	Function         string          `json:"function"`
	FunctionResponse bedrockFnResult `json:"functionResponse"`
}

type bedrockFnResult struct {
	ResponseState string                            `json:"responseState,omitempty"`
	ResponseBody  map[string]map[string]interface{} `json:"responseBody"`
}

// bedrockArgs turns typed string parameters into a JSON object: numbers, integers, booleans
// and arrays are decoded when they are valid JSON, everything else stays a string.
func bedrockArgs(ps []BedrockParam) json.RawMessage {
	m := map[string]json.RawMessage{}
	for _, p := range ps {
		v := json.RawMessage(strconv.Quote(p.Value))
		if p.Type != "string" && json.Valid([]byte(p.Value)) {
			v = json.RawMessage(p.Value)
		}
		m[p.Name] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// HandleLambda answers one invocation of any of the three shapes.
func (s *Service) HandleLambda(ctx context.Context, event json.RawMessage) (any, error) {
	var probe struct {
		ActionGroup    *string         `json:"actionGroup"`
		RequestContext json.RawMessage `json:"requestContext"`
		RawPath        *string         `json:"rawPath"`
	}
	_ = json.Unmarshal(event, &probe)
	switch {
	case probe.ActionGroup != nil:
		var ev BedrockEvent
		if err := json.Unmarshal(event, &ev); err != nil {
			return nil, err
		}
		a := s.Call(ctx, Caller{Principal: ev.SessionAttributes[PrincipalAttribute], Session: ev.SessionID}, ev.Function, bedrockArgs(ev.Parameters))
		body, _ := json.Marshal(a)
		res := bedrockFnResult{ResponseBody: map[string]map[string]interface{}{"TEXT": {"body": string(body)}}}
		if !a.OK {
			res.ResponseState = "FAILURE"
			if a.Error.Code == InvalidArgument {
				res.ResponseState = "REPROMPT"
			}
		}
		return BedrockResponse{MessageVersion: "1.0", SessionAttributes: ev.SessionAttributes, PromptSessionAttributes: ev.PromptSessionAttributes,
			Response: bedrockFnResponse{ActionGroup: ev.ActionGroup, Function: ev.Function, FunctionResponse: res}}, nil
	case probe.RawPath != nil && len(probe.RequestContext) > 0:
		var req events.LambdaFunctionURLRequest
		if err := json.Unmarshal(event, &req); err != nil {
			return nil, err
		}
		return s.serveURL(ctx, req)
	default:
		lc, _ := lambdacontext.FromContext(ctx)
		var custom map[string]string
		if lc != nil {
			custom = lc.ClientContext.Custom
		}
		tool := s.stripGatewayPrefix(custom[gatewayToolKey])
		// A gateway passes no end-user identity to a Lambda target: jobs are the gateway's,
		// per gateway session.
		who := Caller{Principal: "agentcore-gateway:" + custom[gatewayIDKey], Session: custom[gatewaySessionKey]}
		if custom[gatewayIDKey] == "" {
			who.Principal = ""
		}
		if who.Session == "" {
			who.Session = "gateway"
		}
		return s.Call(ctx, who, tool, event), nil
	}
}

// urlWriter collects a function URL response.
type urlWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *urlWriter) Header() http.Header         { return w.header }
func (w *urlWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *urlWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

// urlPrincipal is a function URL caller's principal: the IAM identity whose SigV4 signature
// the function URL verified (requestContext.authorizer.iam.userArn, present with AWS_IAM
// auth). A request naming another principal in X-Fleet-Principal is refused, never believed:
// any caller allowed to invoke the URL could otherwise read and start another's jobs.
func urlPrincipal(req events.LambdaFunctionURLRequest) (string, *Answer) {
	var arn string
	if a := req.RequestContext.Authorizer; a != nil && a.IAM != nil {
		arn = a.IAM.UserARN
	}
	if arn == "" {
		a := fail(Unauthenticated, false, "no verified IAM identity in the request context: the function URL must use AWS_IAM auth")
		return "", &a
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, HeaderPrincipal) && v != arn {
			a := fail(PermissionDenied, false, "%s may only name the identity that signed the request (%s)", HeaderPrincipal, arn)
			return "", &a
		}
	}
	return arn, nil
}

// serveURL runs a function URL request through Handler.
func (s *Service) serveURL(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	h, err := s.Handler()
	if err != nil {
		return events.LambdaFunctionURLResponse{}, err
	}
	principal, refused := urlPrincipal(req)
	if refused != nil {
		b, _ := json.Marshal(refused)
		return events.LambdaFunctionURLResponse{StatusCode: httpStatus(*refused),
			Headers: map[string]string{"content-type": "application/json"}, Body: string(b)}, nil
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return events.LambdaFunctionURLResponse{StatusCode: http.StatusBadRequest}, nil
		}
	}
	u := req.RawPath
	if req.RawQueryString != "" {
		u += "?" + req.RawQueryString
	}
	hr, err := http.NewRequestWithContext(ctx, req.RequestContext.HTTP.Method, u, bytes.NewReader(body))
	if err != nil {
		return events.LambdaFunctionURLResponse{StatusCode: http.StatusBadRequest}, nil
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	// Handler reads the principal from its header: here it is only the verified identity.
	hr.Header.Set(HeaderPrincipal, principal)
	w := &urlWriter{header: http.Header{}}
	h.ServeHTTP(w, hr)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	out := events.LambdaFunctionURLResponse{StatusCode: w.code, Headers: map[string]string{}, Body: w.body.String()}
	for k := range w.header {
		out.Headers[strings.ToLower(k)] = w.header.Get(k)
	}
	return out, nil
}
