package deploy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/compiler/lifecycle"
)

// fakeCodeDeploy is CodeDeploy's CreateDeployment as its API reference documents it (AWS JSON
// 1.1: POST / with X-Amz-Target CodeDeploy_20141006.CreateDeployment, answer {"deploymentId"}),
// behind an httptest server: no emulator speaks CodeDeploy (kumo answers UnknownService). It
// fails the test on any other request, and keeps each request's body.
func fakeCodeDeploy(t *testing.T) (*codedeploy.Client, *[]map[string]any) {
	t.Helper()
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/" ||
			r.Header.Get("X-Amz-Target") != "CodeDeploy_20141006.CreateDeployment" ||
			r.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
			!strings.Contains(r.Header.Get("Authorization"), "/us-east-1/codedeploy/aws4_request") {
			t.Errorf("unexpected request %s %s %v", r.Method, r.URL, r.Header)
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		bodies = append(bodies, body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = io.WriteString(w, `{"deploymentId":"d-`+strings.Repeat("A", 8)+string(rune('0'+len(bodies)))+`"}`)
	}))
	t.Cleanup(srv.Close)
	c := codedeploy.New(codedeploy.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
	return c, &bodies
}

// TestStartShifts: one CreateDeployment per shift, naming the application and group and
// carrying the AppSpec that moves alias live from the current to the published version.
func TestStartShifts(t *testing.T) {
	c, bodies := fakeCodeDeploy(t)
	started, err := StartShifts(context.Background(), c, []Shift{
		{Class: "classify", Function: "triage-classify", App: "triage-workers", Group: "triage-classify", From: "3", To: "4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || started[0].DeploymentID != "d-AAAAAAAA1" {
		t.Fatalf("started %+v", started)
	}
	got, _ := json.Marshal((*bodies)[0])
	want := `{"applicationName":"triage-workers","deploymentGroupName":"triage-classify","description":"fleetc apply: classify 3 → 4",` +
		`"revision":{"appSpecContent":{"content":"{\"version\":0.0,\"Resources\":[{\"live\":{\"Type\":\"AWS::Lambda::Function\",` +
		`\"Properties\":{\"Name\":\"triage-classify\",\"Alias\":\"live\",\"CurrentVersion\":\"3\",\"TargetVersion\":\"4\"}}}]}"},` +
		`"revisionType":"AppSpecContent"}}`
	if string(got) != want {
		t.Errorf("CreateDeployment body\n got %s\nwant %s", got, want)
	}
}

// TestPendingShifts: only classes whose function the plan changed and whose alias is behind
// the published version shift; an unchanged function (after a rollback) starts nothing.
func TestPendingShifts(t *testing.T) {
	f := irtest.Load(t, rolloutSpec)
	outs := []Output{
		{Name: "codedeploy_app", Value: json.RawMessage(`"triage-workers"`)},
		{Name: "codedeploy_deployment_groups", Value: json.RawMessage(`{"classify":"triage-classify","enrich":"triage-enrich","tag":"triage-tag"}`)},
		{Name: "lambda_live_versions", Value: json.RawMessage(`{"classify":"3","enrich":"7","tag":"2"}`)},
		{Name: "lambda_published_versions", Value: json.RawMessage(`{"classify":"4","enrich":"8","tag":"2"}`)},
	}
	s := &Summary{Changes: []Change{
		{Address: "aws_lambda_function.classify", Action: lifecycle.Update},
		{Address: "aws_lambda_function.tag", Action: lifecycle.Update},
		{Address: "aws_sqs_queue.enrich", Action: lifecycle.Update},
	}}
	shifts, err := PendingShifts(f, s, outs)
	if err != nil {
		t.Fatal(err)
	}
	if len(shifts) != 1 || shifts[0].Class != "classify" || shifts[0].From != "3" || shifts[0].To != "4" || shifts[0].Group != "triage-classify" || shifts[0].App != "triage-workers" {
		t.Errorf("shifts %+v, want classify 3 → 4 only (enrich's function is unchanged, tag is already live)", shifts)
	}
	if _, err := PendingShifts(f, s, outs[:1]); err == nil {
		t.Error("no error when the outputs name no group or versions")
	}
}
