package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/worker"
)

// jobsEnv is a worker for an async tool class whose idempotency and jobs tables live in kumo.
type jobsEnv struct {
	ddb       *dynamodb.Client
	jobsTable string
	w         *worker.Worker
	calls     atomic.Int32
	// handle is the step; it sees the job record as it stands while the step runs.
	handle func(ctx context.Context, rec map[string]string) (json.RawMessage, error)
}

func newJobsEnv(t *testing.T) *jobsEnv {
	t.Helper()
	awsCfg := kumotest.Require(t)
	e := &jobsEnv{ddb: kumotest.DynamoDB(awsCfg)}
	e.jobsTable = kumotest.Name(t, "jobs")
	// The jobs table of compiler/terraform: pk S hash only.
	_, err := e.ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(e.jobsTable),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("create jobs table: %v", err)
	}
	t.Cleanup(func() {
		_, _ = e.ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(e.jobsTable)})
	})
	cfg := &config.Config{File: config.File{
		FormatVersion: 1, Fleet: "tools", Class: "cdk-synth", Runtime: "lambda",
		Queue:       config.Queue{VisibilityTimeoutSeconds: 60, MaxReceives: 3},
		Step:        config.Step{P95Seconds: 5, MaxSeconds: 30},
		Retry:       config.Retry{MaxAttempts: 2, BaseMS: 10, CapMS: 100},
		Idempotency: config.Idempotency{Table: kumotest.Table(t, awsCfg, "idem"), WindowSeconds: 3600, Key: []string{"jobId"}},
		Jobs:        &config.Jobs{Table: e.jobsTable, IDField: "jobId", StatusPollAfterSeconds: 15},
	}}
	e.w = &worker.Worker{
		Cfg:  cfg,
		Idem: &idem.Dynamo{API: e.ddb, Table: cfg.Idempotency.Table, Class: cfg.Class, Window: cfg.Idempotency.Window()},
		Jobs: &worker.DynamoJobs{API: e.ddb, Table: e.jobsTable},
		Handler: handler.Func(func(ctx context.Context, req handler.Request) (json.RawMessage, error) {
			e.calls.Add(1)
			var d struct{ JobID string }
			_ = json.Unmarshal(req.Input, &d)
			return e.handle(ctx, e.record(t, d.JobID))
		}),
	}
	return e
}

// queued writes the record the start tool writes before publishing CdkSynthRequested.
func (e *jobsEnv) queued(t *testing.T, id string) {
	t.Helper()
	_, err := e.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(e.jobsTable),
		Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "JOB#" + id}, "gsi1pk": &ddbtypes.AttributeValueMemberS{Value: "IDEM#k-" + id},
			"status": &ddbtypes.AttributeValueMemberS{Value: "QUEUED"}, "stackName": &ddbtypes.AttributeValueMemberS{Value: "api"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *jobsEnv) record(t *testing.T, id string) map[string]string {
	t.Helper()
	out, err := e.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.jobsTable), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "JOB#" + id}},
	})
	if err != nil {
		t.Errorf("read job %s: %v", id, err)
		return nil
	}
	rec := map[string]string{}
	for k, v := range out.Item {
		if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
			rec[k] = s.Value
		}
	}
	return rec
}

func jobBody(id string) []byte {
	b, _ := json.Marshal(map[string]any{"trace_id": "t-" + id, "jobId": id, "stackName": "api", "ref": "main", "schemaVersion": 1})
	return b
}

func TestJobRunningThenSucceeded(t *testing.T) {
	e := newJobsEnv(t)
	const id = "5d0f6c1e-0000-4000-8000-000000000001"
	e.queued(t, id)
	var during map[string]string
	e.handle = func(_ context.Context, rec map[string]string) (json.RawMessage, error) {
		during = rec
		return json.RawMessage(`{"artifactUri":"s3://synth-artifacts/api/main.zip","templates":3}`), nil
	}
	res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(id), Attempt: 1})
	if res.Action != queue.Delete {
		t.Fatalf("verdict %+v", res.Outcome)
	}
	if during["status"] != worker.JobRunning || during["updatedAt"] == "" {
		t.Errorf("record while the step ran = %v, want RUNNING with updatedAt", during)
	}
	rec := e.record(t, id)
	if rec["status"] != worker.JobSucceeded || rec["artifactUri"] != "s3://synth-artifacts/api/main.zip" {
		t.Errorf("record after = %v, want SUCCEEDED with the handler's artifactUri", rec)
	}
	if !strings.Contains(rec["result"], `"templates":3`) || rec["errorMessage"] != "" {
		t.Errorf("result summary %q, errorMessage %q", rec["result"], rec["errorMessage"])
	}
	if rec["stackName"] != "api" || rec["gsi1pk"] != "IDEM#k-"+id {
		t.Errorf("the start tool's fields were lost: %v", rec)
	}
}

func TestPoisonJobEndsFailed(t *testing.T) {
	e := newJobsEnv(t)
	const id = "5d0f6c1e-0000-4000-8000-000000000002"
	e.queued(t, id)
	e.handle = func(_ context.Context, rec map[string]string) (json.RawMessage, error) {
		if rec["status"] != worker.JobRunning {
			t.Errorf("status during the step = %q, want RUNNING", rec["status"])
		}
		return nil, retry.Permanent("SynthFailed", errors.New("stack api: cdk.json not found"))
	}
	res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(id), Attempt: 1})
	if res.Action != queue.DeadLetter {
		t.Fatalf("verdict %+v, want dead letter", res.Outcome)
	}
	rec := e.record(t, id)
	if rec["status"] != worker.JobFailed || !strings.Contains(rec["errorMessage"], "cdk.json not found") || !strings.Contains(rec["errorMessage"], "SynthFailed") {
		t.Errorf("record = %v, want FAILED with the handler's error", rec)
	}

	// A retryable failure leaves the job RUNNING until the retries run out (each receive
	// retries it in process through a 1 s step window, then releases it).
	e.w.Cfg.Step.MaxSeconds = 1
	const id2 = "5d0f6c1e-0000-4000-8000-000000000003"
	e.queued(t, id2)
	e.handle = func(context.Context, map[string]string) (json.RawMessage, error) {
		return nil, retry.Retryable("Throttled", errors.New("codebuild busy"))
	}
	if res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: jobBody(id2), Attempt: 1}); res.Action != queue.Release {
		t.Fatalf("attempt 1 verdict %+v, want release", res.Outcome)
	}
	if rec := e.record(t, id2); rec["status"] != worker.JobRunning {
		t.Errorf("after a retryable failure: %v, want RUNNING", rec)
	}
	if res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: jobBody(id2), Attempt: 2}); res.Action != queue.DeadLetter {
		t.Fatalf("attempt 2 verdict %+v, want dead letter", res.Outcome)
	}
	if rec := e.record(t, id2); rec["status"] != worker.JobFailed || !strings.Contains(rec["errorMessage"], "codebuild busy") {
		t.Errorf("after the last attempt: %v, want FAILED", rec)
	}
}

func TestDuplicateAfterSuccessStaysSucceeded(t *testing.T) {
	e := newJobsEnv(t)
	const id = "5d0f6c1e-0000-4000-8000-000000000004"
	e.queued(t, id)
	var seen []string
	e.handle = func(_ context.Context, rec map[string]string) (json.RawMessage, error) {
		seen = append(seen, rec["status"])
		return json.RawMessage(`{"artifactUri":"s3://a/1"}`), nil
	}
	if res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(id), Attempt: 1}); res.Action != queue.Delete {
		t.Fatalf("first verdict %+v", res.Outcome)
	}
	// Same work redelivered: answered from the idempotency record, the step does not run.
	res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: jobBody(id), Attempt: 1})
	if res.Action != queue.Delete || !res.Duplicate || e.calls.Load() != 1 {
		t.Fatalf("duplicate verdict %+v duplicate=%v calls=%d", res.Outcome, res.Duplicate, e.calls.Load())
	}
	if rec := e.record(t, id); rec["status"] != worker.JobSucceeded || rec["artifactUri"] != "s3://a/1" {
		t.Errorf("after the duplicate: %v", rec)
	}
	// The idempotency record gone (window passed): the step runs again, but RUNNING must
	// not overwrite the finished job.
	e.w.Idem = &idem.Dynamo{API: e.ddb, Table: kumotest.Table(t, kumotest.Require(t), "idem2"), Class: "cdk-synth", Window: e.w.Cfg.Idempotency.Window()}
	if res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m3", Body: jobBody(id), Attempt: 1}); res.Action != queue.Delete {
		t.Fatalf("re-run verdict %+v", res.Outcome)
	}
	if len(seen) != 2 || seen[0] != worker.JobRunning || seen[1] != worker.JobSucceeded {
		t.Errorf("statuses seen by the step = %v, want [RUNNING SUCCEEDED]", seen)
	}
	// And a later dead letter does not turn it FAILED.
	if err := e.w.Jobs.Failed(context.Background(), id, "late"); !errors.Is(err, worker.ErrJobTerminal) {
		t.Errorf("Failed on a SUCCEEDED job = %v, want ErrJobTerminal", err)
	}
	if rec := e.record(t, id); rec["status"] != worker.JobSucceeded || rec["errorMessage"] != "" {
		t.Errorf("final record %v", rec)
	}
}

// flakyJobsAPI fails the first n SUCCEEDED writes.
type flakyJobsAPI struct {
	worker.JobsAPI
	n atomic.Int32
}

func (f *flakyJobsAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.HasPrefix(aws.ToString(in.UpdateExpression), "SET #s = :ok") && f.n.Add(-1) >= 0 {
		return nil, errors.New("injected: ProvisionedThroughputExceeded")
	}
	return f.JobsAPI.UpdateItem(ctx, in, opt...)
}

func TestJobStatusWriteRetriedWithoutRerun(t *testing.T) {
	e := newJobsEnv(t)
	const id = "5d0f6c1e-0000-4000-8000-000000000005"
	e.queued(t, id)
	flaky := &flakyJobsAPI{JobsAPI: e.ddb}
	flaky.n.Store(5) // more than one delivery's retries
	e.w.Jobs = &worker.DynamoJobs{API: flaky, Table: e.jobsTable}
	e.handle = func(context.Context, map[string]string) (json.RawMessage, error) {
		return json.RawMessage(`{"artifactUri":"s3://a/2"}`), nil
	}
	res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(id), Attempt: 1})
	if res.Action != queue.Release || res.Reason == nil || res.Reason.Code != "JobStatusFailed" {
		t.Fatalf("verdict %+v, want release with JobStatusFailed", res.Outcome)
	}
	if rec := e.record(t, id); rec["status"] != worker.JobRunning {
		t.Errorf("after the failed write: %v", rec)
	}
	res = e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(id), Attempt: 2})
	if res.Action != queue.Delete || e.calls.Load() != 1 {
		t.Fatalf("redelivery verdict %+v, handler calls %d; want delete with one call", res.Outcome, e.calls.Load())
	}
	if rec := e.record(t, id); rec["status"] != worker.JobSucceeded || rec["artifactUri"] != "s3://a/2" {
		t.Errorf("after the redelivery: %v", rec)
	}
}

// A job id the start tool wrote as a JSON number is the same job: its record (JOB#<digits>)
// moves to SUCCEEDED.
func TestNumericJobID(t *testing.T) {
	e := newJobsEnv(t)
	const id = "20261201"
	e.queued(t, id)
	e.handle = func(context.Context, map[string]string) (json.RawMessage, error) {
		return json.RawMessage(`{"artifactUri":"s3://a/n"}`), nil
	}
	body := []byte(`{"trace_id":"t-n","jobId":` + id + `,"stackName":"api","ref":"main","schemaVersion":1}`)
	res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: body, Attempt: 1})
	if res.Action != queue.Delete {
		t.Fatalf("verdict %+v", res.Outcome)
	}
	if rec := e.record(t, id); rec["status"] != worker.JobSucceeded || rec["artifactUri"] != "s3://a/n" {
		t.Errorf("record %v, want SUCCEEDED with the handler's artifactUri", rec)
	}
}

// failingWrites fails every status write whose update expression starts with prefix.
type failingWrites struct {
	worker.JobsAPI
	prefix string
}

func (f *failingWrites) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.HasPrefix(aws.ToString(in.UpdateExpression), f.prefix) {
		return nil, errors.New("injected: ProvisionedThroughputExceeded")
	}
	return f.JobsAPI.UpdateItem(ctx, in, opt...)
}

// The RUNNING write is advisory: when it fails through its retries the step still runs and
// succeeds, and the failure is logged (once), while a RUNNING write that worked logs nothing.
func TestJobRunningWriteFailureIsLogged(t *testing.T) {
	e := newJobsEnv(t)
	var log bytes.Buffer
	e.w.Log = slog.New(slog.NewTextHandler(&log, nil))
	e.handle = func(context.Context, map[string]string) (json.RawMessage, error) {
		return json.RawMessage(`{"artifactUri":"s3://a/r"}`), nil
	}
	const ok, failing = "5d0f6c1e-0000-4000-8000-000000000011", "5d0f6c1e-0000-4000-8000-000000000012"
	e.queued(t, ok)
	e.queued(t, failing)
	if res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(ok), Attempt: 1}); res.Action != queue.Delete {
		t.Fatalf("verdict %+v", res.Outcome)
	}
	if strings.Contains(log.String(), "could not mark job RUNNING") {
		t.Errorf("a RUNNING write that worked is logged as failed: %s", log.String())
	}
	e.w.Jobs = &worker.DynamoJobs{API: &failingWrites{JobsAPI: e.ddb, prefix: "SET #s = :running"}, Table: e.jobsTable}
	if res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: jobBody(failing), Attempt: 1}); res.Action != queue.Delete {
		t.Fatalf("verdict %+v, want delete: the step runs without its RUNNING mark", res.Outcome)
	}
	if rec := e.record(t, failing); rec["status"] != worker.JobSucceeded {
		t.Errorf("record %v, want SUCCEEDED", rec)
	}
	if n := strings.Count(log.String(), "could not mark job RUNNING"); n != 1 {
		t.Errorf("%d \"could not mark job RUNNING\" lines, want 1:\n%s", n, log.String())
	}
}
