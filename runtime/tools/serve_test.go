package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetc/fleetc/runtime/tools"
	"github.com/fleetc/fleetc/schemas/jobs"
)

// caller adds the identity headers an authenticated front would assert.
type caller struct {
	who  tools.Caller
	base http.RoundTripper
}

func (c caller) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(tools.HeaderPrincipal, c.who.Principal)
	r.Header.Set(tools.HeaderSession, c.who.Session)
	return c.base.RoundTrip(r)
}

// TestMCPClientStartsAndPolls: the official Go SDK's client lists the three tools of
// examples/async-tools over streamable HTTP and calls start -> status.
func TestMCPClientStartsAndPolls(t *testing.T) {
	e := newEnv(t)
	h, err := e.svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "fleetc-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + tools.MCPPath,
		HTTPClient: &http.Client{Transport: caller{alice, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "get_cdk_synth_status,list_my_jobs,start_cdk_synth" {
		t.Errorf("tools/list = %v", names)
	}
	var args map[string]any
	_ = json.Unmarshal([]byte(synthArgs), &args)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_cdk_synth", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("start: %v %+v", err, res)
	}
	var started tools.Answer
	_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &started)
	if !started.OK || started.Status != jobs.Queued || started.NextTool != "get_cdk_synth_status" {
		t.Fatalf("start answer = %+v", started)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: started.NextTool, Arguments: map[string]any{"jobId": started.JobID}})
	if err != nil || res.IsError {
		t.Fatalf("status: %v %+v", err, res)
	}
	var st tools.Answer
	_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &st)
	if st.JobID != started.JobID || st.Status != jobs.Queued || st.ResumeHint.Action != tools.Poll {
		t.Errorf("status answer = %+v", st)
	}
	// Malformed arguments are a tool error, not a protocol failure, and write nothing more.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_cdk_synth", Arguments: map[string]any{"stackName": ""}})
	if err != nil || !res.IsError {
		t.Errorf("malformed start: %v %+v", err, res)
	}
	if n := e.items(t); n != 1 {
		t.Errorf("jobs = %d, want 1", n)
	}
}

// TestHTTPAndLambdaShapes: the plain HTTP+JSON route, a Bedrock Agents action group event
// (function details) and an AgentCore Gateway target invocation reach the same job.
func TestHTTPAndLambdaShapes(t *testing.T) {
	e := newEnv(t)
	h, err := e.svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+tools.ToolsPath+"start_cdk_synth", strings.NewReader(synthArgs))
	req.Header.Set(tools.HeaderPrincipal, alice.Principal)
	req.Header.Set(tools.HeaderSession, alice.Session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var viaHTTP tools.Answer
	_ = json.NewDecoder(resp.Body).Decode(&viaHTTP)
	resp.Body.Close()
	if resp.StatusCode != 200 || !viaHTTP.OK {
		t.Fatalf("HTTP start: %d %+v", resp.StatusCode, viaHTTP)
	}
	req, _ = http.NewRequest(http.MethodPost, srv.URL+tools.ToolsPath+"get_cdk_synth_status", strings.NewReader(`{"jobId":"`+viaHTTP.JobID+`"}`))
	req.Header.Set(tools.HeaderPrincipal, bob.Principal)
	req.Header.Set(tools.HeaderSession, bob.Session)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob's status over HTTP = %d, want 404", resp.StatusCode)
	}

	// Bedrock Agents: same principal (session attribute), same session, same key: same job.
	ev := map[string]any{
		"messageVersion": "1.0", "actionGroup": "synth", "function": "start_cdk_synth", "sessionId": alice.Session,
		"agent":             map[string]any{"name": "a", "id": "AG", "alias": "TSTALIASID", "version": "DRAFT"},
		"sessionAttributes": map[string]string{tools.PrincipalAttribute: alice.Principal},
		"parameters": []map[string]string{
			{"name": "stackName", "type": "string", "value": "api"}, {"name": "ref", "type": "string", "value": "main"},
			{"name": "schemaVersion", "type": "integer", "value": "1"}, {"name": "idempotencyKey", "type": "string", "value": "synth-api-main-1"},
		},
	}
	raw, _ := json.Marshal(ev)
	out, err := e.svc.HandleLambda(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var br struct {
		MessageVersion string
		Response       struct {
			ActionGroup, Function string
			FunctionResponse      struct {
				ResponseState string
				ResponseBody  map[string]struct{ Body string }
			}
		}
	}
	_ = json.Unmarshal(b, &br)
	var viaBedrock tools.Answer
	_ = json.Unmarshal([]byte(br.Response.FunctionResponse.ResponseBody["TEXT"].Body), &viaBedrock)
	if br.MessageVersion != "1.0" || br.Response.Function != "start_cdk_synth" || br.Response.ActionGroup != "synth" ||
		br.Response.FunctionResponse.ResponseState != "" || viaBedrock.JobID != viaHTTP.JobID || !viaBedrock.Resumed {
		t.Errorf("Bedrock answer = %s", b)
	}
	// A Bedrock call with unusable arguments asks the model again (REPROMPT).
	ev["parameters"] = []map[string]string{{"name": "stackName", "type": "string", "value": "api"}}
	raw, _ = json.Marshal(ev)
	out, _ = e.svc.HandleLambda(context.Background(), raw)
	if b, _ := json.Marshal(out); !bytes.Contains(b, []byte(`"responseState":"REPROMPT"`)) {
		t.Errorf("Bedrock bad arguments = %s", b)
	}

	// The function URL (AWS_IAM): an HTTP request event, the caller's IAM identity the
	// principal (url_test.go has the cross-principal cases).
	urlEvent := events.LambdaFunctionURLRequest{RawPath: tools.ToolsPath + "get_cdk_synth_status", Body: `{"jobId":"` + viaHTTP.JobID + `"}`,
		Headers: map[string]string{"content-type": "application/json", strings.ToLower(tools.HeaderSession): alice.Session}}
	urlEvent.RequestContext.HTTP.Method = http.MethodPost
	urlEvent.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
		IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::111122223333:role/someone-else"}}
	raw, _ = json.Marshal(urlEvent)
	out, err = e.svc.HandleLambda(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if r := out.(events.LambdaFunctionURLResponse); r.StatusCode != http.StatusNotFound {
		t.Errorf("function URL status as another IAM identity = %d %s, want 404", r.StatusCode, r.Body)
	}
	urlEvent.Headers[strings.ToLower(tools.HeaderPrincipal)] = alice.Principal
	raw, _ = json.Marshal(urlEvent)
	out, _ = e.svc.HandleLambda(context.Background(), raw)
	if r := out.(events.LambdaFunctionURLResponse); r.StatusCode != http.StatusForbidden || !strings.Contains(r.Body, `"code":"PERMISSION_DENIED"`) {
		t.Errorf("function URL status naming alice, signed by another identity = %d %s, want 403", r.StatusCode, r.Body)
	}
	urlEvent.RequestContext.Authorizer.IAM.UserARN = alice.Principal
	raw, _ = json.Marshal(urlEvent)
	out, _ = e.svc.HandleLambda(context.Background(), raw)
	if r := out.(events.LambdaFunctionURLResponse); r.StatusCode != http.StatusOK || !strings.Contains(r.Body, `"status":"QUEUED"`) {
		t.Errorf("function URL status = %d %s", r.StatusCode, r.Body)
	}

	// AgentCore Gateway: bare arguments, the tool name prefixed with the target's.
	lc := &lambdacontext.LambdaContext{ClientContext: lambdacontext.ClientContext{Custom: map[string]string{
		"bedrockAgentCoreToolName": "synth-target___start_cdk_synth", "bedrockAgentCoreGatewayId": "gw-1",
	}}}
	out, err = e.svc.HandleLambda(lambdacontext.NewContext(context.Background(), lc), json.RawMessage(synthArgs))
	if err != nil {
		t.Fatal(err)
	}
	gw := out.(tools.Answer)
	if !gw.OK || gw.JobID == viaHTTP.JobID || gw.NextTool != "get_cdk_synth_status" {
		t.Errorf("gateway start = %+v, want a job of the gateway's own", gw)
	}
}

// inspectorCLI is the MCP inspector's CLI, installed by tools/install.sh (mcp-inspector).
const inspectorCLI = "../../tools/mcp-inspector/node_modules/@modelcontextprotocol/inspector-cli/build/index.js"

// TestInspectorCLIListsAndCalls: an independent MCP client (the inspector's CLI, TypeScript
// SDK) lists the tools over streamable HTTP and calls start -> status.
func TestInspectorCLIListsAndCalls(t *testing.T) {
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(inspectorCLI); err != nil || serr != nil {
		t.Skipf("SKIPPED, CHECKER NOT AVAILABLE: node or %s (install with: bash tools/install.sh mcp-inspector)", inspectorCLI)
	}
	cli, err := filepath.Abs(inspectorCLI)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	h, err := e.svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	inspect := func(args ...string) []byte {
		t.Helper()
		all := append([]string{cli, srv.URL + tools.MCPPath, "--transport", "http",
			"--header", tools.HeaderPrincipal + ": " + alice.Principal, "--header", tools.HeaderSession + ": " + alice.Session}, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, all...)
		// The CLI reads its own package.json relative to the working directory.
		cmd.Dir = filepath.Dir(cli)
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("inspector %v: %v\n%s", args, err, ee.Stderr)
			}
			t.Fatalf("inspector %v: %v", args, err)
		}
		return out
	}
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(inspect("--method", "tools/list"), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "get_cdk_synth_status,list_my_jobs,start_cdk_synth" {
		t.Errorf("inspector tools/list = %v", names)
	}
	var call struct {
		Content []struct{ Text string }
		IsError bool
	}
	out := inspect("--method", "tools/call", "--tool-name", "start_cdk_synth",
		"--tool-arg", "stackName=api", "--tool-arg", "ref=main", "--tool-arg", "schemaVersion=1", "--tool-arg", "idempotencyKey=inspector-key-1")
	if err := json.Unmarshal(out, &call); err != nil || call.IsError || len(call.Content) == 0 {
		t.Fatalf("inspector start: %v %s", err, out)
	}
	var started tools.Answer
	_ = json.Unmarshal([]byte(call.Content[0].Text), &started)
	out = inspect("--method", "tools/call", "--tool-name", started.NextTool, "--tool-arg", "jobId="+started.JobID)
	call.Content = nil
	if err := json.Unmarshal(out, &call); err != nil || call.IsError || len(call.Content) == 0 {
		t.Fatalf("inspector status: %v %s", err, out)
	}
	var st tools.Answer
	_ = json.Unmarshal([]byte(call.Content[0].Text), &st)
	if st.JobID != started.JobID || st.Status != jobs.Queued || st.ResumeHint == nil || st.ResumeHint.Action != tools.Poll {
		t.Errorf("inspector status answer = %s", call.Content[0].Text)
	}
	if os.Getenv("FLEETC_SHOW_MCP") != "" {
		t.Logf("tools/call %s ->\n%s", started.NextTool, out)
	}
}
