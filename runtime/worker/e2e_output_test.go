package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// stepServer is an http handler answering each step from answers, keyed by the consumed
// detail's invoice_id, and recording every detail it was given.
type stepServer struct {
	mu      sync.Mutex
	answers map[string]string
	seen    []map[string]json.RawMessage
	srv     *httptest.Server
}

func newStepServer(t *testing.T, answers map[string]string) *stepServer {
	s := &stepServer{answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d map[string]json.RawMessage
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &d)
		var id string
		_ = json.Unmarshal(d["invoice_id"], &id)
		s.mu.Lock()
		s.seen = append(s.seen, d)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, s.answers[id])
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stepServer) details() []map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), s.seen...)
}

// invoiceClass loads class's runtime config as fleetc generates it for examples/invoices and
// points it at fresh kumo resources and an http handler.
func invoiceClass(t *testing.T, awsCfg aws.Config, class, bus, handlerURL string) (*config.Config, *env) {
	cfg, err := config.Load("../../compiler/testdata/golden/invoices/runtime/" + class + ".json")
	if err != nil {
		t.Fatal(err)
	}
	dlqName, dlqURL := kumotest.Queue(t, awsCfg, class+"-dlq", false, nil)
	qName, qURL := kumotest.Queue(t, awsCfg, class, false, map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"4"}`, kumotest.QueueARN(dlqName)),
	})
	cfg.Queue.Name, cfg.Queue.DLQName, cfg.QueueURL, cfg.DLQURL = qName, dlqName, qURL, dlqURL
	cfg.Queue.VisibilityTimeoutSeconds, cfg.Queue.WaitTimeSeconds = 30, 1
	cfg.Step.MaxSeconds, cfg.Step.P95Seconds = 20, 2
	cfg.Idempotency.Table = kumotest.Table(t, awsCfg, class)
	cfg.ClaimCheck.Bucket = ""
	cfg.Events.Bus = bus
	cfg.Handler = config.Handler{Type: config.HandlerHTTP, URL: handlerURL}
	e := &env{t: t, cfg: cfg, sqs: awsconfig.SQS(awsCfg), ddb: kumotest.DynamoDB(awsCfg), counter: awsconfig.NewRequestCounter(), queueURL: qURL, dlqURL: dlqURL}
	return cfg, e
}

// End to end on kumo with examples/invoices as fleetc builds it: extract's handler answers
// {"status": "SUCCEEDED", "total": 12.5}; the invoice.extracted it emits carries both (filled
// from the result) and reaches book through an EventBridge rule on status, while a FAILED
// extraction is published but matches no rule. A result {"total": "twelve"} is dead-lettered
// HandlerOutputInvalid and nothing is emitted; an event older than its ttl_seconds is
// dead-lettered Expired without running the handler; a model_policy extract does not allow is
// refused (ModelPolicyNotAllowed).
func TestInvoicesEndToEnd(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	awsCfg := kumotest.Require(t)
	ctx := context.Background()
	bus := kumotest.Name(t, "bus")
	eb := awsconfig.EventBridge(awsCfg)
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = eb.DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: aws.String(bus)})
	})

	extractor := newStepServer(t, map[string]string{
		"inv-ok":         `{"status":"SUCCEEDED","total":12.5,"currency":"EUR"}`,
		"inv-failed":     `{"status":"FAILED","total":0}`,
		"inv-bad":        `{"total":"twelve"}`,
		"inv-old":        `{"status":"SUCCEEDED","total":1}`,
		"inv-policy":     `{"status":"SUCCEEDED","total":2}`,
		"inv-bare-old":   `{"status":"FAILED","total":3}`,
		"inv-bare-fresh": `{"status":"FAILED","total":4}`,
	})
	booker := newStepServer(t, map[string]string{"inv-ok": `{"entry_id":"e-1"}`, "inv-failed": `{"entry_id":"e-2"}`})
	extractCfg, extract := invoiceClass(t, awsCfg, "extract", bus, extractor.srv.URL+"/step")
	bookCfg, book := invoiceClass(t, awsCfg, "book", bus, booker.srv.URL+"/step")
	// A bare detail has no event id to key its work by: key it by the invoice.
	extractCfg.Idempotency.Key = []string{"invoice_id"}

	// book's rule, as fleetc writes it for consumes: {event: invoice.extracted, match: {status: [SUCCEEDED]}}.
	rule := kumotest.Name(t, "book")
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String(bus),
		EventPattern: aws.String(`{"source":["invoices.workers"],"detail-type":["invoice.extracted"],"detail":{"status":["SUCCEEDED"]}}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(bus),
		Targets: []ebtypes.Target{{Id: aws.String("book"), Arn: aws.String(kumotest.QueueARN(bookCfg.Queue.Name))}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg *config.Config
		e   *env
	}{{extractCfg, extract}, {bookCfg, book}} {
		rt, err := worker.Build(ctx, c.cfg, worker.BuildOptions{Getenv: c.e.getenv, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			AWSOptions: awsconfig.Options{Endpoint: kumotest.Endpoint, Region: kumotest.Region,
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = rt.RunPoll(runCtx, 2*time.Second); _ = rt.Close(context.Background()) }()
		t.Cleanup(func() { cancel(); <-done })
	}

	now := time.Now().UTC()
	send := func(id string, at time.Time, extra string) {
		body := fmt.Sprintf(`{"version":"0","id":"evt-%s","detail-type":"invoice.received","source":"invoices.mailroom","time":%q,"region":%q,"resources":[],
			"detail":{%s"trace_id":%q,"invoice_id":%q,"document_uri":"s3://mail/%s.pdf"}}`, id, at.Format(time.RFC3339), kumotest.Region, extra, "t-"+id, id, id)
		if _, err := extract.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(extract.queueURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	send("inv-ok", now, `"model_policy":"careful",`)
	send("inv-failed", now, ``)
	send("inv-bad", now, ``)
	send("inv-old", now.Add(-2*time.Hour), `"ttl_seconds":60,`)
	send("inv-policy", now, `"model_policy":"slow",`)
	// Bare details straight to the queue have no time of their own: their ttl_seconds counts
	// from the queue's SentTimestamp. One delayed past its TTL expires; one within it runs.
	sendBare := func(id string, ttl, delay int32) {
		body := fmt.Sprintf(`{"trace_id":%q,"invoice_id":%q,"document_uri":"s3://mail/%s.pdf","ttl_seconds":%d}`, "t-"+id, id, id, ttl)
		if _, err := extract.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(extract.queueURL), MessageBody: aws.String(body), DelaySeconds: delay}); err != nil {
			t.Fatal(err)
		}
	}
	sendBare("inv-bare-old", 1, 3)
	sendBare("inv-bare-fresh", 3600, 0)

	var dead []dlqMessage
	deadline := time.Now().Add(60 * time.Second)
	for (len(dead) < 4 || len(booker.details()) < 1) && time.Now().Before(deadline) {
		dead = append(dead, extract.drainDLQ()...)
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a wrongly routed or duplicate event would arrive now
	dead = append(dead, extract.drainDLQ()...)

	codes := map[string]string{}
	for _, d := range dead {
		codes[d.Key] = d.Code
		t.Logf("dead letter %s: %s: %s", d.Key, d.Code, d.Message)
	}
	want := map[string]string{"t-inv-bad": string(wire.HandlerOutputInvalid), "t-inv-old": string(wire.Expired), "t-inv-policy": string(wire.ModelPolicyNotAllowed),
		"t-inv-bare-old": string(wire.Expired)}
	if len(dead) != len(want) {
		t.Errorf("%d dead letters, want %d: %v", len(dead), len(want), codes)
	}
	for k, v := range want {
		if codes[k] != v {
			t.Errorf("dead letter of %s: %q, want %q", k, codes[k], v)
		}
	}
	ran := map[string]bool{}
	for _, d := range extractor.details() {
		var id string
		_ = json.Unmarshal(d["invoice_id"], &id)
		ran[id] = true
		if id == "inv-old" || id == "inv-policy" || id == "inv-bare-old" {
			t.Errorf("extract's handler ran for %s", id)
		}
	}
	if !ran["inv-bare-fresh"] {
		t.Error("extract's handler did not run the bare detail within its ttl_seconds")
	}
	booked := booker.details()
	if len(booked) != 1 {
		t.Fatalf("book received %d invoices, want 1 (inv-ok; inv-failed matches no rule, inv-bad emitted nothing): %v", len(booked), booked)
	}
	got := booked[0]
	for k, v := range map[string]string{"invoice_id": `"inv-ok"`, "status": `"SUCCEEDED"`, "total": `12.5`, "currency": `"EUR"`, "agent_class": `"extract"`, "trace_id": `"t-inv-ok"`} {
		if string(got[k]) != v {
			t.Errorf("book's detail.%s = %s, want %s", k, got[k], v)
		}
	}
	if dl := book.drainDLQ(); len(dl) != 0 {
		t.Errorf("book dead-lettered %v", dl)
	}
}
