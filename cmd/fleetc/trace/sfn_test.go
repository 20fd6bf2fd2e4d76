package trace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// On kumo's Step Functions: the executions whose input carries the trace id (top level or
// as an EventBridge event's detail) show with their history; another trace's does not.
func TestExecutionsOfTheTrace(t *testing.T) {
	ctx := context.Background()
	endpoint, err := verifytest.Kumo(ctx)
	verifytest.SkipIfMissing(t, err)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	c := awsconfig.SFN(cfg)
	var b [4]byte
	_, _ = rand.Read(b[:])
	sm, err := c.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("tracet-" + hex.EncodeToString(b[:])),
		Definition: aws.String(`{"StartAt":"Plan","States":{"Plan":{"Type":"Pass","End":true}}}`),
		RoleArn:    aws.String("arn:aws:iam::000000000000:role/fleet-sfn"), Type: sfntypes.StateMachineTypeStandard})
	if err != nil {
		t.Fatalf("CreateStateMachine: %v", err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteStateMachine(ctx, &sfn.DeleteStateMachineInput{StateMachineArn: sm.StateMachineArn})
	})
	since := time.Now().Add(-time.Minute)
	for name, input := range map[string]string{"a": `{"trace_id":"t-1"}`, "b": `{"detail":{"trace_id":"t-1"}}`, "c": `{"trace_id":"t-2"}`} {
		out, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: sm.StateMachineArn, Name: aws.String(name), Input: aws.String(input)})
		if err != nil {
			t.Fatal(err)
		}
		waitStopped(t, c, aws.ToString(out.ExecutionArn))
	}
	tl := &Timeline{TraceID: "t-1", Since: since}
	if err := tl.AddExecutions(ctx, c, "plan", aws.ToString(sm.StateMachineArn)); err != nil {
		t.Fatal(err)
	}
	tl.Sort()
	seen := map[string]int{}
	for i, e := range tl.Entries {
		if i > 0 && e.Time.Before(tl.Entries[i-1].Time) {
			t.Errorf("entry %d is older than the one before: %+v", i, tl.Entries)
		}
		if e.Where != "plan" {
			t.Errorf("entry %+v: where %q", e, e.Where)
		}
		seen[e.ID[:1]+" "+string(e.Source)+" "+e.What]++
	}
	for _, x := range []string{"a", "b"} {
		for _, want := range []string{"execution started", "execution SUCCEEDED", "history ExecutionStarted", "history ExecutionSucceeded"} {
			if seen[x+" "+want] != 1 {
				t.Errorf("execution %s: %q seen %d times; entries %+v", x, want, seen[x+" "+want], tl.Entries)
			}
		}
	}
	for k := range seen {
		if k[0] == 'c' {
			t.Errorf("execution c of trace t-2 shows: %+v", tl.Entries)
			break
		}
	}
}

func waitStopped(t *testing.T, c *sfn.Client, arn string) {
	t.Helper()
	for range 100 {
		d, err := c.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s still running", arn)
}
