package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/jobstore"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/tools"
	"github.com/fleetc/fleetc/runtime/worker"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/jobs"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// goldenTools is the tools config fleetc build writes for examples/async-tools.
const goldenTools = "../../compiler/testdata/golden/async-tools/tools/tools.json"

// env is the async tools of examples/async-tools against kumo: the jobs table as
// compiler/terraform declares it (hash pk, the by_owner index), the fleet's bus with the
// cdk-synth rule delivering CdkSynthRequested to the class queue, and the class's worker.
type env struct {
	svc    *tools.Service
	ddb    *dynamodb.Client
	sqs    *sqs.Client
	eb     *eventbridge.Client
	table  string
	queue  string
	w      *worker.Worker
	handle func(ctx context.Context) (json.RawMessage, error)
	calls  atomic.Int32
	cfg    *rc.Tools
}

func newEnv(t *testing.T) *env {
	t.Helper()
	awsCfg := kumotest.Require(t)
	ctx := context.Background()
	raw, err := os.ReadFile(goldenTools)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.ParseTools(goldenTools, raw)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ddb: kumotest.DynamoDB(awsCfg), sqs: awsconfig.SQS(awsCfg), eb: awsconfig.EventBridge(awsCfg), cfg: cfg}
	e.table = kumotest.JobsTable(t, awsCfg)
	s := func(n string) *string { return aws.String(n) }

	bus := kumotest.Name(t, "bus")
	if _, err := e.eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: s(bus)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = e.eb.DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: s(bus)})
	})
	qName, qURL := kumotest.Queue(t, awsCfg, "cdk-synth", false, nil)
	e.queue = qURL
	rule := kumotest.Name(t, "rule")
	c := cfg.Classes[0]
	if _, err := e.eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: s(rule), EventBusName: s(bus),
		EventPattern: s(`{"source":["` + c.Request.Source + `"],"detail-type":["` + c.Request.DetailType + `"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: s(rule), EventBusName: s(bus),
		Targets: []ebtypes.Target{{Id: s("q"), Arn: s(kumotest.QueueARN(qName))}}}); err != nil {
		t.Fatal(err)
	}
	cfg.Table, cfg.Bus = e.table, bus
	e.svc, err = tools.New(cfg, &jobstore.Store{API: e.ddb, Table: e.table}, &tools.EventBridge{API: e.eb, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}

	wcfg := &config.Config{File: config.File{
		FormatVersion: 1, Fleet: "tools", Class: c.Class, Runtime: "lambda",
		Queue:       config.Queue{VisibilityTimeoutSeconds: 60, MaxReceives: 2},
		Step:        config.Step{P95Seconds: 5, MaxSeconds: 30},
		Retry:       config.Retry{MaxAttempts: 1, BaseMS: 10, CapMS: 100},
		Idempotency: config.Idempotency{Table: kumotest.Table(t, awsCfg, "idem"), WindowSeconds: 3600, Key: []string{"jobId"}},
		Jobs:        &config.Jobs{Table: e.table, IDField: c.IDField, StatusPollAfterSeconds: c.StatusPollAfterSeconds},
	}}
	e.w = &worker.Worker{
		Cfg:  wcfg,
		Idem: &idem.Dynamo{API: e.ddb, Table: wcfg.Idempotency.Table, Class: wcfg.Class, Window: wcfg.Idempotency.Window()},
		Jobs: &worker.DynamoJobs{API: e.ddb, Table: e.table},
		Handler: handler.Func(func(ctx context.Context, req handler.Request) (json.RawMessage, error) {
			e.calls.Add(1)
			return e.handle(ctx)
		}),
	}
	return e
}

var alice = tools.Caller{Principal: "user/alice", Session: "sess-1"}
var bob = tools.Caller{Principal: "user/bob", Session: "sess-1"}

func (e *env) call(t *testing.T, who tools.Caller, tool, args string) tools.Answer {
	t.Helper()
	return e.svc.Call(context.Background(), who, tool, json.RawMessage(args))
}

// events receives (and deletes) every request event on the class queue.
func (e *env) events(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		r, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			out = append(out, aws.ToString(m.Body))
			_, _ = e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queue), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// items counts the jobs table's items.
func (e *env) items(t *testing.T) int32 {
	t.Helper()
	out, err := e.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table), Select: ddbtypes.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

const synthArgs = `{"stackName":"api","ref":"main","schemaVersion":1,"idempotencyKey":"synth-api-main-1"}`

func TestStartTwiceIsOneJobAndOneEvent(t *testing.T) {
	e := newEnv(t)
	a := e.call(t, alice, "start_cdk_synth", synthArgs)
	if !a.OK || a.Status != jobs.Queued || a.NextTool != "get_cdk_synth_status" || a.PollAfterSec != 15 || a.Resumed {
		t.Fatalf("first start = %+v", a)
	}
	b := e.call(t, alice, "start_cdk_synth", synthArgs)
	if !b.OK || b.JobID != a.JobID || !b.Resumed {
		t.Fatalf("second start = %+v, want the same job %s", b, a.JobID)
	}
	evs := e.events(t)
	if len(evs) != 1 || e.items(t) != 1 {
		t.Fatalf("events %d, jobs %d; want one of each", len(evs), e.items(t))
	}
	var ev struct {
		DetailType string `json:"detail-type"`
		Source     string `json:"source"`
		Detail     map[string]any
	}
	_ = json.Unmarshal([]byte(evs[0]), &ev)
	if ev.DetailType != "CdkSynthRequested" || ev.Source != "com.cheatcoders.agents" || ev.Detail["jobId"] != a.JobID ||
		ev.Detail["stackName"] != "api" || ev.Detail["trace_id"] == "" || ev.Detail["idempotencyKey"] != nil {
		t.Errorf("request event = %s", evs[0])
	}
	// Another principal with the same key is another job.
	if c := e.call(t, bob, "start_cdk_synth", synthArgs); !c.OK || c.JobID == a.JobID {
		t.Errorf("bob's start = %+v, want a job of his own", c)
	}
	rec, _ := (&jobstore.Store{API: e.ddb, Table: e.table}).Get(context.Background(), a.JobID)
	if rec == nil || rec.PrincipalID != "user/alice" || rec.SessionID != "sess-1" || rec.ExpiresAt == 0 || rec.CreatedAt == "" {
		t.Errorf("record = %+v, want principal, session, createdAt and expiresAt", rec)
	}
}

// work runs the worker on every request event waiting on the class queue.
func (e *env) work(t *testing.T) []worker.Result {
	t.Helper()
	var out []worker.Result
	for i, body := range e.events(t) {
		out = append(out, e.w.Process(context.Background(), worker.Delivery{MessageID: "m" + string(rune('a'+i)), Body: []byte(body), Attempt: 1}))
	}
	return out
}

func TestStatusWalksQueuedRunningSucceeded(t *testing.T) {
	e := newEnv(t)
	a := e.call(t, alice, "start_cdk_synth", synthArgs)
	st := e.call(t, alice, "get_cdk_synth_status", `{"jobId":"`+a.JobID+`"}`)
	if !st.OK || st.Status != jobs.Queued || st.ResumeHint == nil || st.ResumeHint.Action != tools.Poll || st.ResumeHint.PollAfterSec != 15 {
		t.Fatalf("status before the worker = %+v", st)
	}
	var during tools.Answer
	e.handle = func(context.Context) (json.RawMessage, error) {
		during = e.call(t, alice, "get_cdk_synth_status", `{"jobId":"`+a.JobID+`"}`)
		return json.RawMessage(`{"artifactUri":"s3://synth/api/main.zip"}`), nil
	}
	if res := e.work(t); len(res) != 1 || res[0].Action != queue.Delete {
		t.Fatalf("worker verdicts %+v", res)
	}
	if during.Status != jobs.Running || during.ResumeHint.Action != tools.Poll {
		t.Errorf("status while the worker ran = %+v", during)
	}
	done := e.call(t, alice, "get_cdk_synth_status", `{"jobId":"`+a.JobID+`"}`)
	if done.Status != jobs.Succeeded || done.ArtifactURI != "s3://synth/api/main.zip" || done.ResumeHint.Action != tools.Continue ||
		!strings.Contains(string(done.Result), "main.zip") {
		t.Errorf("status after = %+v", done)
	}
	if os.Getenv("FLEETC_SHOW_EXCHANGE") != "" { // docs/async-tools.md shows this exchange
		for _, x := range []struct {
			call string
			a    tools.Answer
		}{{"start_cdk_synth " + synthArgs, a}, {"get_cdk_synth_status (before the worker)", st}, {"get_cdk_synth_status (after)", done}} {
			b, _ := json.MarshalIndent(x.a, "", "  ")
			t.Logf("%s ->\n%s", x.call, b)
		}
	}
	// A finished job never moves back: a late dead letter cannot turn it FAILED.
	if err := e.w.Jobs.Failed(context.Background(), a.JobID, "late"); !errors.Is(err, worker.ErrJobTerminal) {
		t.Errorf("Failed on a SUCCEEDED job = %v", err)
	}
}

func TestFailingWorkerEndsFailedWithReplan(t *testing.T) {
	e := newEnv(t)
	a := e.call(t, alice, "start_cdk_synth", synthArgs)
	e.handle = func(context.Context) (json.RawMessage, error) {
		return nil, retry.Permanent("SynthFailed", errors.New("cdk.json not found"))
	}
	if res := e.work(t); len(res) != 1 || res[0].Action != queue.DeadLetter {
		t.Fatalf("worker verdicts %+v", res)
	}
	st := e.call(t, alice, "get_cdk_synth_status", `{"jobId":"`+a.JobID+`"}`)
	if st.Status != jobs.Failed || !strings.Contains(st.ErrorMessage, "cdk.json not found") || st.ResumeHint.Action != tools.Replan {
		t.Errorf("status = %+v", st)
	}
	// FAILED is final: a redriven success does not rewrite it.
	if err := e.w.Jobs.Succeeded(context.Background(), a.JobID, worker.JobResult{ArtifactURI: "s3://x"}); !errors.Is(err, worker.ErrJobTerminal) {
		t.Errorf("Succeeded on a FAILED job = %v", err)
	}
	// The same start again returns the failed job, not a new one (the user must confirm a
	// new attempt with a new key).
	if again := e.call(t, alice, "start_cdk_synth", synthArgs); again.JobID != a.JobID || again.Status != jobs.Failed {
		t.Errorf("start after FAILED = %+v", again)
	}
}

func TestPrincipalsCannotSeeEachOthersJobs(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for _, ref := range []string{"r1", "r2", "r3"} {
		a := e.call(t, alice, "start_cdk_synth", `{"stackName":"api","ref":"`+ref+`","schemaVersion":1,"idempotencyKey":"key-`+ref+`-alice"}`)
		if !a.OK {
			t.Fatal(a.Error)
		}
		ids = append(ids, a.JobID)
	}
	for _, id := range ids {
		if st := e.call(t, bob, "get_cdk_synth_status", `{"jobId":"`+id+`"}`); st.OK || st.Error.Code != tools.NotFound || st.Error.Retryable {
			t.Errorf("bob reading alice's job = %+v, want non-retryable NOT_FOUND", st)
		}
	}
	if st := e.call(t, alice, "get_cdk_synth_status", `{"jobId":"00000000-0000-4000-8000-000000000000"}`); st.Error == nil || st.Error.Code != tools.NotFound {
		t.Errorf("unknown job = %+v", st)
	}
	if st := e.call(t, alice, "get_cdk_synth_status", `{"jobId":"JOB#forged"}`); st.Error == nil || st.Error.Code != tools.NotFound {
		t.Errorf("forged job id = %+v", st)
	}
	if st := e.call(t, alice, "get_cdk_synth_status", `{}`); st.Error == nil || st.Error.Code != tools.InvalidArgument {
		t.Errorf("status without jobId = %+v", st)
	}
	if l := e.call(t, bob, "list_my_jobs", `{}`); !l.OK || len(l.Jobs) != 0 {
		t.Errorf("bob's list = %+v", l)
	}
	if l := e.call(t, tools.Caller{Principal: alice.Principal, Session: "other"}, "list_my_jobs", `{}`); len(l.Jobs) != 0 {
		t.Errorf("alice's list in another session = %+v", l)
	}
	// Newest first, one per page, the token walking to the end.
	var got []string
	token := ""
	for range 5 {
		args := `{"limit":1}`
		if token != "" {
			args = `{"limit":1,"nextToken":"` + token + `"}`
		}
		l := e.call(t, alice, "list_my_jobs", args)
		if !l.OK {
			t.Fatal(l.Error)
		}
		for _, j := range l.Jobs {
			got = append(got, j.JobID)
			if j.StatusTool != "get_cdk_synth_status" || j.Status != jobs.Queued {
				t.Errorf("summary = %+v", j)
			}
		}
		if token = l.NextToken; token == "" {
			break
		}
	}
	want := []string{ids[2], ids[1], ids[0]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("pages = %v, want newest first %v", got, want)
	}
	if l := e.call(t, alice, "list_my_jobs", `{"status":"SUCCEEDED"}`); !l.OK || len(l.Jobs) != 0 {
		t.Errorf("status filter = %+v", l)
	}
	if l := e.call(t, alice, "list_my_jobs", `{"status":"DONE"}`); l.Error == nil || l.Error.Code != tools.InvalidArgument {
		t.Errorf("bad status filter = %+v", l)
	}
}

func TestMalformedArgumentsWriteNothing(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, args, want string }{
		{"missing field", `{"ref":"main","schemaVersion":1,"idempotencyKey":"k-12345678"}`, "stackName"},
		{"wrong type", `{"stackName":"api","ref":"main","schemaVersion":"1","idempotencyKey":"k-12345678"}`, "schemaVersion"},
		{"out of enum", `{"stackName":"api","ref":"main","schemaVersion":2,"idempotencyKey":"k-12345678"}`, "schemaVersion"},
		{"too long", `{"stackName":"` + strings.Repeat("s", 129) + `","ref":"main","schemaVersion":1,"idempotencyKey":"k-12345678"}`, "stackName"},
		{"job id from the caller", `{"jobId":"x","stackName":"api","ref":"main","schemaVersion":1,"idempotencyKey":"k-12345678"}`, "jobId"},
		{"no idempotency key", `{"stackName":"api","ref":"main","schemaVersion":1}`, "idempotencyKey"},
		{"short idempotency key", `{"stackName":"api","ref":"main","schemaVersion":1,"idempotencyKey":"k"}`, "idempotencyKey"},
		{"not an object", `["api"]`, "JSON object"},
		{"oversized", `{"stackName":"api","ref":"` + strings.Repeat("r", tools.MaxArgumentBytes) + `","schemaVersion":1,"idempotencyKey":"k-12345678"}`, "limit"},
		// Within MaxArgumentBytes, but the event (with job id, trace id, source and detail
		// type) would pass PutEvents' 1 MB: refused before a job is written.
		{"event over PutEvents", `{"stackName":"api","ref":"` + strings.Repeat("r", tools.MaxArgumentBytes-80) + `","schemaVersion":1,"idempotencyKey":"k-12345678"}`, "an event delivered to a queue may carry"},
		// Within PutEvents' 1 MiB, but the event EventBridge delivers (its envelope around
		// the entry) would not fit the class queue's message.
		{"event over the queue's message", `{"stackName":"api","ref":"` + strings.Repeat("r", awslimits.PutEventsMaxRequestBytes-600) + `","schemaVersion":1,"idempotencyKey":"k-12345678"}`, "an event delivered to a queue may carry"},
	} {
		a := e.call(t, alice, "start_cdk_synth", tc.args)
		if a.OK || a.Error.Code != tools.InvalidArgument || a.Error.Retryable || !strings.Contains(a.Error.Message, tc.want) {
			t.Errorf("%s: %+v", tc.name, a.Error)
		}
	}
	if a := e.call(t, tools.Caller{Session: "s"}, "start_cdk_synth", synthArgs); a.Error == nil || a.Error.Code != tools.Unauthenticated {
		t.Errorf("no principal: %+v", a)
	}
	if a := e.call(t, alice, "start_nothing", `{}`); a.Error == nil || a.Error.Code != tools.UnknownTool {
		t.Errorf("unknown tool: %+v", a)
	}
	if n, evs := e.items(t), e.events(t); n != 0 || len(evs) != 0 {
		t.Errorf("after refused starts: %d jobs, %d events; want none", n, len(evs))
	}
}

func TestRefusedEventLeavesNoQueuedJob(t *testing.T) {
	e := newEnv(t)
	// kumo accepts PutEvents for any bus, so the refusal comes from an httptest server that
	// asserts the request (one entry for the fleet's bus, awsJson1.1 AWSEvents.PutEvents) and
	// answers as EventBridge documents a refused entry: 200, FailedEntryCount 1, the entry's
	// ErrorCode and ErrorMessage.
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Entries []struct{ EventBusName, DetailType, Source, Detail string }
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" || len(in.Entries) != 1 || in.Entries[0].EventBusName != e.cfg.Bus ||
			in.Entries[0].DetailType != "CdkSynthRequested" {
			t.Errorf("PutEvents request: %s %+v", r.Header.Get("X-Amz-Target"), in)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = w.Write([]byte(`{"FailedEntryCount":1,"Entries":[{"ErrorCode":"ThrottlingException","ErrorMessage":"Rate exceeded"}]}`))
	}))
	defer refuse.Close()
	refusingEB := eventbridge.NewFromConfig(kumotest.Require(t), func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(refuse.URL) })
	refusing, err := tools.New(e.cfg, &jobstore.Store{API: e.ddb, Table: e.table}, &tools.EventBridge{API: refusingEB, Bus: e.cfg.Bus})
	if err != nil {
		t.Fatal(err)
	}
	a := refusing.Call(context.Background(), alice, "start_cdk_synth", json.RawMessage(synthArgs))
	if a.OK || a.Error.Code != tools.StartFailed || !a.Error.Retryable || a.Error.JobID == "" {
		t.Fatalf("start on a refusing bus = %+v", a)
	}
	st := e.call(t, alice, "get_cdk_synth_status", `{"jobId":"`+a.Error.JobID+`"}`)
	if st.Status != jobs.FailedToStart || st.ResumeHint.Action != tools.Replan || !strings.Contains(st.ErrorMessage, "ThrottlingException") {
		t.Errorf("status after the refusal = %+v", st)
	}
	// The same start on a working bus publishes it: QUEUED again, one event.
	b := e.call(t, alice, "start_cdk_synth", synthArgs)
	if !b.OK || b.JobID != a.Error.JobID || b.Status != jobs.Queued {
		t.Errorf("retried start = %+v", b)
	}
	if evs := e.events(t); len(evs) != 1 {
		t.Errorf("events after the retry = %d, want 1", len(evs))
	}
}

// Every job's table key starts with its principal's jobs.JobKeyPrefix, the prefix an llm
// class's role is held to (dynamodb:LeadingKeys): the key a role may get and put says whose
// job it is, so a class's role cannot read or overwrite another principal's job by its id.
// The ids stay UUIDs, as the request events' contracts declare jobId.
func TestJobKeysStartWithTheOwnersPrefix(t *testing.T) {
	e := newEnv(t)
	llm := tools.Caller{Principal: jobs.ClassPrincipal("release-assistant"), Session: "conv-1"}
	for _, who := range []tools.Caller{alice, bob, llm} {
		if a := e.call(t, who, "start_cdk_synth", synthArgs); !a.OK {
			t.Fatalf("%s: %+v", who.Principal, a.Error)
		}
	}
	out, err := e.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 3 {
		t.Fatalf("%d job items, want 3", len(out.Items))
	}
	for _, it := range out.Items {
		pk := it[jobs.AttrPK].(*ddbtypes.AttributeValueMemberS).Value
		principal := it[jobs.AttrPrincipal].(*ddbtypes.AttributeValueMemberS).Value
		id := it[jobs.AttrJobID].(*ddbtypes.AttributeValueMemberS).Value
		if !strings.HasPrefix(pk, jobs.JobKeyPrefix(principal)) {
			t.Errorf("job %s of %s: key %q does not start with %q", id, principal, pk, jobs.JobKeyPrefix(principal))
		}
		if _, err := uuid.Parse(id); err != nil {
			t.Errorf("job id %q is not a UUID: %v", id, err)
		}
		for _, other := range []tools.Caller{alice, bob, llm} {
			if other.Principal != principal && strings.HasPrefix(pk, jobs.JobKeyPrefix(other.Principal)) {
				t.Errorf("job %s of %s is under %s's key prefix too", id, principal, other.Principal)
			}
		}
	}
}
