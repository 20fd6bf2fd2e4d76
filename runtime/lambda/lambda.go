// Package lambda runs the worker as a Lambda function behind an SQS event
// source mapping with ReportBatchItemFailures: it speaks the Lambda runtime
// API (AWS_LAMBDA_RUNTIME_API) over HTTP itself and answers each batch with
// {"batchItemFailures": [...]}, so only failed messages come back.
//
// The same function also answers direct invocations: an Express state machine
// invokes a lambda class synchronously (arn:aws:states:::lambda:invoke) with the
// Step Functions task shape minus the TaskToken. The response is the handler
// result; a failure is a function error whose errorType Step Functions reports
// as the state's error (ErrorRetry for work the worker would have retried).
package lambda

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/lambda/sqsevent"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/step"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/contract"
)

// EnvRuntimeAPI is the host:port of the Lambda runtime API.
const EnvRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

const apiVersion = "2018-06-01"

// SafetyMargin is kept free at the end of an invocation to report the
// batch (and release what did not finish) before Lambda kills us.
const SafetyMargin = 2 * time.Second

// SQSAPI is what the handler needs from SQS: the DLQ send and releasing
// failed messages with a jittered delay (the ESM leaves them to the
// queue's visibility timeout otherwise).
type SQSAPI interface {
	queue.API
}

// Handler processes SQS events with a worker.
type Handler struct {
	Worker   step.Worker
	SQS      SQSAPI
	QueueURL string
	DLQURL   string
	FIFO     bool
	// Process, when set, replaces the worker's step pipeline for each message (the AgentCore
	// dispatcher); until is the invocation's end less the safety margin.
	Process func(ctx context.Context, m *queue.Message, until time.Time) queue.Outcome
}

// ErrorRetry is the errorType of a direct invocation the worker would have released for a
// retry (compiler/asl retries it). Other failures report contract.ErrorPrefix + reason code.
const ErrorRetry = contract.ErrorRetry

// InvokeError is a direct invocation's failure, reported as a function error.
type InvokeError struct{ Type, Message string }

// Invoke runs one direct (synchronous) invocation: there is no message to release or
// dead-letter, so a failure goes back to the caller, whose execution history keeps it.
func (h *Handler) Invoke(ctx context.Context, requestID string, body []byte, deadline time.Time) (json.RawMessage, *InvokeError) {
	res := h.Worker.Process(ctx, step.Delivery{MessageID: requestID, Body: body, Attempt: 1, InvocationDeadline: deadline.Add(-SafetyMargin)})
	msg := "step failed"
	if res.Reason != nil {
		msg = string(res.Reason.Code) + ": " + res.Reason.Message
	}
	switch res.Action {
	case queue.Delete:
		if len(res.Output) == 0 {
			return json.RawMessage("null"), nil
		}
		return res.Output, nil
	case queue.DeadLetter:
		code := wire.Failed
		if res.Reason != nil && res.Reason.Code != "" {
			code = res.Reason.Code
		}
		return nil, &InvokeError{Type: contract.ErrorPrefix + string(code), Message: msg}
	default:
		return nil, &InvokeError{Type: ErrorRetry, Message: msg}
	}
}

// direct says an invocation payload is not an SQS batch from the event source mapping.
func direct(body []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	_, batch := probe["Records"]
	return !batch
}

// Handle runs one batch and returns its partial batch response. FIFO
// groups run in order; after a failure the rest of its group is reported
// failed unprocessed, as the ESM requires for FIFO queues.
func (h *Handler) Handle(ctx context.Context, ev sqsevent.Event, deadline time.Time) sqsevent.Response {
	msgs := make([]*queue.Message, len(ev.Records))
	now := time.Now()
	for i, r := range ev.Records {
		msgs[i] = toMessage(r, now)
		if h.FIFO && msgs[i].GroupID == "" {
			msgs[i].GroupID = h.Worker.GroupOf(msgs[i])
		}
	}
	var order []string
	groups := map[string][]*queue.Message{}
	for _, m := range msgs {
		g := m.ID // standard queue: every message alone
		if h.FIFO {
			g = "g:" + m.GroupID
		}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], m)
	}
	limit := h.Worker.Concurrency()
	if limit < 1 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	var mu sync.Mutex
	failed := map[string]bool{}
	release := map[string]int32{}
	fail := func(m *queue.Message, delay time.Duration) {
		mu.Lock()
		failed[m.ID] = true
		if delay >= 0 {
			release[m.ID] = int32((delay + time.Second - 1) / time.Second)
		}
		mu.Unlock()
	}
	invDeadline := deadline.Add(-SafetyMargin)
	var wg sync.WaitGroup
	for _, g := range order {
		ms := groups[g]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for i, m := range ms {
				out := h.process(ctx, m, invDeadline)
				if out.ok {
					continue
				}
				fail(m, out.delay)
				for _, rest := range ms[i+1:] {
					fail(rest, out.delay)
				}
				return
			}
		}()
	}
	wg.Wait()
	h.releaseAll(ctx, msgs, release)
	resp := sqsevent.Response{BatchItemFailures: []sqsevent.ItemFailure{}}
	for _, m := range msgs { // in batch order: deterministic
		if failed[m.ID] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, sqsevent.ItemFailure{ItemIdentifier: m.ID})
		}
	}
	return resp
}

type verdict struct {
	ok    bool
	delay time.Duration // -1: leave visibility alone
}

func (h *Handler) process(ctx context.Context, m *queue.Message, invDeadline time.Time) verdict {
	var res queue.Outcome
	if h.Process != nil {
		res = h.Process(ctx, m, invDeadline)
	} else {
		d := step.DeliveryOf(m)
		d.InvocationDeadline = invDeadline
		res = h.Worker.Process(ctx, d).Outcome
	}
	switch res.Action {
	case queue.Delete:
		return verdict{ok: true}
	case queue.Release:
		return verdict{delay: res.Delay}
	case queue.DeadLetter:
		if err := queue.SendToDLQ(context.WithoutCancel(ctx), h.SQS, h.DLQURL, h.FIFO, m, res.Reason, h.Worker.Logger()); err != nil {
			// Not accepted by the DLQ: report failed so the message stays.
			return verdict{delay: 5 * time.Second}
		}
		return verdict{ok: true} // the ESM deletes it
	default:
		return verdict{delay: -1}
	}
}

// releaseAll sets each failed message's visibility to its retry delay, so
// retries follow full jitter instead of the queue's whole visibility timeout.
func (h *Handler) releaseAll(ctx context.Context, msgs []*queue.Message, delays map[string]int32) {
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for i, m := range msgs {
		if v, ok := delays[m.ID]; ok {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(m.Receipt), VisibilityTimeout: v})
		}
	}
	for start := 0; start < len(entries); start += awslimits.SQSMaxBatch {
		end := min(start+awslimits.SQSMaxBatch, len(entries))
		if _, err := h.SQS.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(h.QueueURL), Entries: entries[start:end]}); err != nil && h.Worker.Logger() != nil {
			h.Worker.Logger().Warn("release after failure failed; messages return at the visibility timeout", "err", err)
		}
	}
}

func toMessage(r sqsevent.Record, now time.Time) *queue.Message {
	attrs := map[string]types.MessageAttributeValue{}
	for k, v := range r.MessageAttributes {
		attrs[k] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return queue.FromSQS(types.Message{
		MessageId: aws.String(r.MessageID), ReceiptHandle: aws.String(r.ReceiptHandle), Body: aws.String(r.Body),
		Attributes: r.Attributes, MessageAttributes: attrs,
	}, now)
}

// Loop is the runtime API client loop.
type Loop struct {
	API     string // host:port
	Client  *http.Client
	Handler *Handler
}

// Run serves invocations until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	base := "http://" + l.API + "/" + apiVersion + "/runtime"
	c := l.Client
	if c == nil {
		c = &http.Client{} // no timeout: /next blocks until an event arrives
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/invocation/next", nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("lambda runtime: next: %w", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("lambda runtime: read event: %w", err)
		}
		id := resp.Header.Get("Lambda-Runtime-Aws-Request-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			return fmt.Errorf("lambda runtime: next answered %d without a request id", resp.StatusCode)
		}
		if tr := resp.Header.Get("Lambda-Runtime-Trace-Id"); tr != "" {
			os.Setenv("_X_AMZN_TRACE_ID", tr)
		}
		deadline := time.Now().Add(15 * time.Minute)
		if ms, err := strconv.ParseInt(resp.Header.Get("Lambda-Runtime-Deadline-Ms"), 10, 64); err == nil {
			deadline = time.UnixMilli(ms)
		}
		if direct(body) {
			ictx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
			out, ierr := l.Handler.Invoke(ictx, id, body, deadline)
			cancel()
			path, payload := "/response", []byte(out)
			if ierr != nil {
				path, payload = "/error", errorBody(ierr.Type, ierr.Message)
			}
			if err := l.post(context.WithoutCancel(ctx), c, base+"/invocation/"+id+path, payload, ierr != nil); err != nil {
				return err
			}
			continue
		}
		var ev sqsevent.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			if err := l.post(ctx, c, base+"/invocation/"+id+"/error", errorBody("InvalidEvent", err.Error()), true); err != nil {
				return err
			}
			continue
		}
		ictx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		out := l.Handler.Handle(ictx, ev, deadline)
		cancel()
		raw, _ := json.Marshal(out)
		if err := l.post(context.WithoutCancel(ctx), c, base+"/invocation/"+id+"/response", raw, false); err != nil {
			return err
		}
	}
}

func errorBody(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]string{"errorType": typ, "errorMessage": msg})
	return b
}

func (l *Loop) post(ctx context.Context, c *http.Client, url string, body []byte, isErr bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if isErr {
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Unhandled")
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("lambda runtime: post: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("lambda runtime: %s answered %d", url, resp.StatusCode)
	}
	return nil
}

// Run wires a Runtime into the Lambda loop. Steps renew their own lease and
// SFN heartbeat (there is no poller heartbeat in Lambda).
func Run(ctx context.Context, h step.Host, getenv func(string) string) error {
	api := getenv(EnvRuntimeAPI)
	if api == "" {
		return errors.New("lambda mode: AWS_LAMBDA_RUNTIME_API is not set (not running in Lambda?)")
	}
	h.Worker.RenewItself()
	l := &Loop{API: api, Handler: &Handler{Worker: h.Worker, SQS: h.SQS, QueueURL: h.Cfg.QueueURL, DLQURL: h.Cfg.DLQURL, FIFO: h.Cfg.Queue.FIFO}}
	return l.Run(ctx)
}
