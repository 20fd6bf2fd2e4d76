// Package dlqtest is a small fleet on kumo for the DLQ tools' tests: the class queues, DLQs
// and idempotency table named by the compiled spec, a real fleet-worker (in process) per
// class, and an HTTP handler whose bug can be fixed mid-test.
package dlqtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/worker"
	"github.com/fleetc/fleetc/spec/diag"
)

// Region is the fixture fleet's region (kumo answers any).
const Region = "us-east-1"

// EnvEndpoint points the fixture at another kumo than the shared one on
// verifytest.KumoEndpoint (a private instance while developing; SQS and DynamoDB only, so
// any port works).
const EnvEndpoint = "FLEETC_DLQTEST_KUMO"

// Spec is the fixture fleet: solver (standard queue) and chat (FIFO, grouped by
// conversation_id), both consuming job.requested. %s is the fleet's name.
const Spec = `version: 1
fleet: %s
region: us-east-1
bus: { name: %s }
worker:
  eks: { cluster: test, keda_operator_role: "arn:aws:iam::123456789012:role/keda-operator" }
events:
  job.requested:
    version: 1
    source: test.app
    detail:
      type: object
      required: [trace_id, job, conversation_id]
      properties:
        trace_id: { type: string }
        job: { type: string }
        conversation_id: { type: string, maxLength: 128 }
        seq: { type: integer }
agents:
  solver:
    runtime: eks
    consumes: { event: job.requested }
    step: { p95: 1s, max: 10s }
    handler: { http: "http://127.0.0.1:9/step" }
  chat:
    runtime: eks
    consumes: { event: job.requested }
    ordering: { fifo: true, group_by: conversation_id }
    step: { p95: 1s, max: 10s }
    handler: { http: "http://127.0.0.1:9/step" }
`

// Fleet is the fixture on kumo.
type Fleet struct {
	Name, Spec, Endpoint string
	IR                   *ir.Fleet
	AWS                  aws.Config
	SQS                  *sqs.Client
	DDB                  *dynamodb.Client
	Targets              map[string]*dlq.Target // resolved
	Handler              *Handler
	DeliveryURL          string // the bus's delivery DLQ
}

// createQueue (re)creates queue name with attrs and deletes it when the test ends.
func (f *Fleet) createQueue(t *testing.T, name string, attrs map[string]string) string {
	t.Helper()
	ctx := context.Background()
	if old, err := f.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err == nil {
		_, _ = f.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: old.QueueUrl})
	}
	out, err := f.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = f.SQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	return url
}

// New writes the spec into a temporary directory, compiles it and creates what it names on
// kumo (skipping the test when kumo is not running). name "" is a fresh random name; a fixed
// one (the docs' session) replaces whatever an earlier run left under it.
func New(t *testing.T, name string) *Fleet {
	t.Helper()
	endpoint := os.Getenv(EnvEndpoint)
	if endpoint == "" {
		var err error
		endpoint, err = verifytest.Kumo(context.Background())
		verifytest.SkipIfMissing(t, err)
		if err != nil {
			t.Fatal(err)
		}
	}
	if name == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		name = "dlqt-" + hex.EncodeToString(b[:])
	}
	var err error
	var ds diag.Diagnostics
	f := &Fleet{Name: name, Endpoint: endpoint, Spec: filepath.Join(t.TempDir(), "fleet.yaml"), Targets: map[string]*dlq.Target{}}
	if err := os.WriteFile(f.Spec, []byte(fmt.Sprintf(Spec, name, name)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, f.IR, ds = compiler.Load(f.Spec)
	if f.IR == nil || ds.HasErrors() {
		t.Fatalf("the fixture spec does not compile: %v", ds)
	}
	f.AWS, err = awsconfig.Load(context.Background(), awsconfig.Options{Region: Region, Endpoint: endpoint,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	f.SQS, f.DDB = awsconfig.SQS(f.AWS), awsconfig.DynamoDB(f.AWS, awsconfig.WithoutCRC32)
	ts, err := dlq.Targets(f.IR, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tg := range ts {
		for _, q := range []string{tg.DLQ, tg.Queue} {
			attrs := map[string]string{}
			if tg.FIFO {
				attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
			}
			f.createQueue(t, q, attrs)
		}
		if err := tg.Resolve(ctx, f.SQS); err != nil {
			t.Fatal(err)
		}
		f.Targets[tg.Class] = tg
	}
	f.DeliveryURL = f.createQueue(t, f.IR.TargetDLQ.Name, nil)
	table := ts[0].Table
	_, _ = f.DDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	_, err = f.DDB.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange}}})
	if err != nil {
		t.Fatalf("create table %s: %v", table, err)
	}
	t.Cleanup(func() {
		_, _ = f.DDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	f.Handler = newHandler(t)
	return f
}

// Handler is the classes' HTTP handler. Until Fix, a job named "bad..." gets a body that is
// not JSON (the worker dead-letters it as BadOutput); every other job completes.
type Handler struct {
	fixed atomic.Bool
	mu    sync.Mutex
	done  map[string]int // completed side effects per idempotency key
	order []string       // completed jobs in order
	URL   string
}

func newHandler(t *testing.T) *Handler {
	h := &Handler{done: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			Job string `json:"job"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &d)
		if strings.HasPrefix(d.Job, "bad") && !h.fixed.Load() {
			fmt.Fprint(w, "<html>oops</html>")
			return
		}
		h.mu.Lock()
		h.done[r.Header.Get("Idempotency-Key")]++
		h.order = append(h.order, d.Job)
		h.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true,"job":%q}`, d.Job)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/step"
	return h
}

// Fix fixes the handler's bug.
func (h *Handler) Fix() { h.fixed.Store(true) }

// Done is how often each key's side effect ran, and the jobs in completion order.
func (h *Handler) Done() (map[string]int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]int{}
	for k, v := range h.done {
		m[k] = v
	}
	return m, append([]string(nil), h.order...)
}

// StartWorker runs a real fleet-worker for class, with the runtime config fleetc builds
// (queue long poll shortened to 1 s so tests stop fast); stop drains it.
func (f *Fleet) StartWorker(t *testing.T, class string) (stop func()) {
	t.Helper()
	var a *ir.Agent
	for _, x := range f.IR.Agents {
		if x.Name == class {
			a = x
		}
	}
	rcfg, err := runtimeconfig.Build(f.IR, a)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(rcfg)
	cfg, err := config.Parse(class+".json", raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Queue.WaitTimeSeconds = 1
	cfg.Handler.URL = f.Handler.URL
	env := map[string]string{worker.EnvDisableDynamoCRC32: "true"}
	rt, err := worker.Build(context.Background(), cfg, worker.BuildOptions{
		Getenv: func(k string) string { return env[k] },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AWSOptions: awsconfig.Options{Endpoint: f.Endpoint, Region: Region,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.RunPoll(ctx, 5*time.Second)
		_ = rt.Close(context.Background())
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// Event is an EventBridge envelope of job.requested with id and detail.
func Event(id string, detail map[string]any) string {
	b, _ := json.Marshal(map[string]any{"version": "0", "id": id, "detail-type": "job.requested", "source": "test.app",
		"time": time.Now().UTC().Format(time.RFC3339), "region": Region, "resources": []string{}, "detail": detail})
	return string(b)
}

// Send puts body on class's queue (FIFO: in group).
func (f *Fleet) Send(t *testing.T, class, body, group string) {
	t.Helper()
	tg := f.Targets[class]
	in := &sqs.SendMessageInput{QueueUrl: aws.String(tg.QueueURL), MessageBody: aws.String(body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"traceparent": {DataType: aws.String("String"), StringValue: aws.String("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}}
	if tg.FIFO {
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(fmt.Sprintf("%x", time.Now().UnixNano()))
	}
	if _, err := f.SQS.SendMessage(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// WaitDepth waits until class's queue (dlq false) or DLQ holds n messages, visible or not.
func (f *Fleet) WaitDepth(t *testing.T, class string, dlqSide bool, n int, within time.Duration) {
	t.Helper()
	tg := f.Targets[class]
	url := tg.QueueURL
	if dlqSide {
		url = tg.DLQURL
	}
	deadline := time.Now().Add(within)
	var d dlq.Depth
	for time.Now().Before(deadline) {
		var err error
		if d, err = dlq.QueueDepth(context.Background(), f.SQS, url); err != nil {
			t.Fatal(err)
		}
		if d.Visible+d.InFlight == n {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s (dlq %t) holds %d visible + %d in flight, want %d", class, dlqSide, d.Visible, d.InFlight, n)
}

// DeadLetter sends body to class's queue and waits until the running worker dead-lettered
// it (the DLQ grows by one), so letters die in a known order.
func (f *Fleet) DeadLetter(t *testing.T, class, body, group string) {
	t.Helper()
	d, err := dlq.QueueDepth(context.Background(), f.SQS, f.Targets[class].DLQURL)
	if err != nil {
		t.Fatal(err)
	}
	f.Send(t, class, body, group)
	f.WaitDepth(t, class, true, d.Visible+d.InFlight+1, 30*time.Second)
}
