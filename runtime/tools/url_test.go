package tools_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fleetc/fleetc/runtime/tools"
)

// Two IAM identities allowed to invoke the tools function URL.
const (
	aliceARN = "arn:aws:iam::111122223333:role/alice-agent"
	bobARN   = "arn:aws:sts::111122223333:assumed-role/bob-agent/session-1"
)

// urlEvent is a function URL invocation as Lambda delivers it with AWS_IAM auth (the request
// payload, version 2.0, of the Lambda developer guide's "Invoking Lambda function URLs"):
// lower-case headers, the verified SigV4 identity under requestContext.authorizer.iam.
// callerARN "" is a URL with auth type NONE: no authorizer at all.
func urlEvent(t *testing.T, callerARN, path, body string, headers map[string]string) json.RawMessage {
	t.Helper()
	h := map[string]string{
		"host":                 "abcdefghijklmnopqrstuvwxyz0123456.lambda-url.us-east-1.on.aws",
		"content-type":         "application/json",
		"x-amz-date":           "20261203T150000Z",
		"x-amzn-trace-id":      "Root=1-5e723b8e-7bb9f1d83d4b2fd0b7b4e9d0",
		"x-forwarded-proto":    "https",
		"x-fleet-session":      "sess-1",
		"x-amz-content-sha256": "UNSIGNED-PAYLOAD",
	}
	for k, v := range headers {
		h[k] = v
	}
	rc := map[string]any{
		"accountId": "444455556666", "apiId": "abcdefghijklmnopqrstuvwxyz0123456",
		"domainName": h["host"], "domainPrefix": "abcdefghijklmnopqrstuvwxyz0123456",
		"http": map[string]any{"method": http.MethodPost, "path": path, "protocol": "HTTP/1.1",
			"sourceIp": "203.0.113.7", "userAgent": "agent"},
		"requestId": "b0e1c6f8-3c4a-4a6a-8f63-0d7a6f7a1c01", "routeKey": "$default", "stage": "$default",
		"time": "03/Dec/2026:15:00:00 +0000", "timeEpoch": 1796223600000,
	}
	if callerARN != "" {
		rc["authorizer"] = map[string]any{"iam": map[string]any{
			"accessKey": "ASIAEXAMPLEKEY000001", "accountId": "111122223333", "callerId": "AROAEXAMPLEID:session-1",
			"cognitoIdentity": nil, "principalOrgId": nil, "userArn": callerARN, "userId": "AROAEXAMPLEID:session-1"}}
	}
	b, err := json.Marshal(map[string]any{
		"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "", "headers": h,
		"requestContext": rc, "body": body, "pathParameters": nil, "isBase64Encoded": false, "stageVariables": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// viaURL invokes the real Lambda entry point with a function URL event.
func (e *env) viaURL(t *testing.T, callerARN, tool, args string, headers map[string]string) (int, tools.Answer) {
	t.Helper()
	out, err := e.svc.HandleLambda(context.Background(), urlEvent(t, callerARN, tools.ToolsPath+tool, args, headers))
	if err != nil {
		t.Fatal(err)
	}
	r := out.(events.LambdaFunctionURLResponse)
	var a tools.Answer
	if err := json.Unmarshal([]byte(r.Body), &a); err != nil {
		t.Fatalf("%s: %d %q: %v", tool, r.StatusCode, r.Body, err)
	}
	return r.StatusCode, a
}

// TestFunctionURLPrincipalIsTheSigV4Identity: on the function URL, bob (signed as his own
// role) naming alice in X-Fleet-Principal cannot read alice's job, list her jobs or start one
// as her: the request is refused and nothing is written. Without the header he is himself:
// her job is not found, her list is not his, his start is his own job. A URL without IAM auth
// has no principal.
func TestFunctionURLPrincipalIsTheSigV4Identity(t *testing.T) {
	e := newEnv(t)
	code, started := e.viaURL(t, aliceARN, "start_cdk_synth", synthArgs, nil)
	if code != http.StatusOK || !started.OK {
		t.Fatalf("alice's start: %d %+v", code, started)
	}
	spoof := map[string]string{"x-fleet-principal": aliceARN}
	status := `{"jobId":"` + started.JobID + `"}`
	for _, c := range []struct{ tool, args string }{
		{"get_cdk_synth_status", status},
		{"list_my_jobs", `{}`},
		{"start_cdk_synth", `{"stackName":"api","ref":"evil","schemaVersion":1,"idempotencyKey":"bob-as-alice-1"}`},
	} {
		code, a := e.viaURL(t, bobARN, c.tool, c.args, spoof)
		if code != http.StatusForbidden || a.OK || a.Error.Code != tools.PermissionDenied || a.JobID != "" || len(a.Jobs) != 0 {
			t.Errorf("bob naming alice, %s: %d %+v, want 403 %s", c.tool, code, a, tools.PermissionDenied)
		}
	}
	if n := e.items(t); n != 1 {
		t.Fatalf("jobs = %d after the spoofed calls, want alice's 1", n)
	}
	if evs := e.events(t); len(evs) != 1 {
		t.Fatalf("request events = %d, want alice's 1", len(evs))
	}

	// Without the header bob is bob.
	if code, a := e.viaURL(t, bobARN, "get_cdk_synth_status", status, nil); code != http.StatusNotFound || a.Error == nil || a.Error.Code != tools.NotFound {
		t.Errorf("bob reading alice's job: %d %+v, want 404", code, a)
	}
	if code, a := e.viaURL(t, bobARN, "list_my_jobs", `{}`, nil); code != http.StatusOK || len(a.Jobs) != 0 {
		t.Errorf("bob's list: %d %+v, want empty", code, a)
	}
	if code, a := e.viaURL(t, bobARN, "start_cdk_synth", synthArgs, nil); code != http.StatusOK || a.JobID == started.JobID || a.Resumed {
		t.Errorf("bob's start with alice's key: %d %+v, want a job of his own", code, a)
	}

	// Alice naming herself, in any header case, is alice.
	if code, a := e.viaURL(t, aliceARN, "list_my_jobs", `{}`, map[string]string{"X-Fleet-Principal": aliceARN}); code != http.StatusOK || len(a.Jobs) != 1 || a.Jobs[0].JobID != started.JobID {
		t.Errorf("alice's list: %d %+v", code, a)
	}
	// No authorizer (auth type NONE): nobody, whatever the header says.
	if code, a := e.viaURL(t, "", "list_my_jobs", `{}`, spoof); code != http.StatusUnauthorized || a.Error == nil || a.Error.Code != tools.Unauthenticated {
		t.Errorf("no IAM identity: %d %+v, want 401", code, a)
	}
}

// TestFunctionURLMCPUsesTheSigV4Identity: the MCP route of the function URL refuses the
// same spoofed header before any tool runs.
func TestFunctionURLMCPUsesTheSigV4Identity(t *testing.T) {
	e := newEnv(t)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_cdk_synth","arguments":` + synthArgs + `}}`
	hdr := map[string]string{"x-fleet-principal": aliceARN, "accept": "application/json, text/event-stream"}
	out, err := e.svc.HandleLambda(context.Background(), urlEvent(t, bobARN, tools.MCPPath, call, hdr))
	if err != nil {
		t.Fatal(err)
	}
	if r := out.(events.LambdaFunctionURLResponse); r.StatusCode != http.StatusForbidden || !strings.Contains(r.Body, string(tools.PermissionDenied)) {
		t.Errorf("MCP start as alice signed by bob: %d %s", r.StatusCode, r.Body)
	}
	delete(hdr, "x-fleet-principal")
	out, _ = e.svc.HandleLambda(context.Background(), urlEvent(t, bobARN, tools.MCPPath, call, hdr))
	if r := out.(events.LambdaFunctionURLResponse); r.StatusCode != http.StatusOK || !strings.Contains(r.Body, `\"ok\":true`) {
		t.Errorf("MCP start as bob: %d %s", r.StatusCode, r.Body)
	}
	if n := e.items(t); n != 1 {
		t.Errorf("jobs = %d, want bob's 1", n)
	}
}
