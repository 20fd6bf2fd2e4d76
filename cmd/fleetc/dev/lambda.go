package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/lambda/sqsevent"
	"github.com/fleetc/fleetc/schemas/awslimits"
)

// RIEName is AWS's Lambda Runtime Interface Emulator binary; RIEInstall says how to get it.
const (
	RIEName    = "aws-lambda-rie"
	RIEInstall = "go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@latest, " +
		"or bash tools/install.sh rie in a fleetc checkout"
)

// rieInvokePath is the one function RIE serves (its Invoke API, as the Lambda service's).
const rieInvokePath = "/2015-03-31/functions/function/invocations"

// findRIE returns the Runtime Interface Emulator to run lambda classes under, "" when there
// is none (dev then polls, and says so).
func findRIE(bin string) (string, error) { return findBinary("--rie-bin", bin, RIEName) }

// freeAddr is a loopback address nothing listens on right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// rieArgs is the command line that runs fleet-worker's Lambda mode under RIE, as the image's
// entrypoint runs in Lambda ("--mode lambda" is the function's image command): RIE serves its
// Invoke API on invoke and the Lambda runtime API on runtimeAPI (AWS_LAMBDA_RUNTIME_API in
// the worker's environment).
func rieArgs(invoke, runtimeAPI, worker, configPath string) []string {
	return []string{"--log-level", "warn", "--runtime-interface-emulator-address", invoke, "--runtime-api-address", runtimeAPI,
		worker, "--config", configPath, "--mode", "lambda"}
}

// lambdaEnv is what the function's configuration gives it in Lambda: its queue and DLQ, and
// the timeout RIE enforces (RIE's default is 300 s, not the function's).
func lambdaEnv(a *ir.Agent, q queueURLs) []string {
	env := []string{"FLEET_QUEUE_URL=" + q.queue, "FLEET_DLQ_URL=" + q.dlq}
	if a.Lambda != nil {
		env = append(env, "AWS_LAMBDA_FUNCTION_NAME="+a.Lambda.FunctionName,
			"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(a.Lambda.Timeout/time.Second)),
			"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(a.Lambda.Memory))
	}
	return env
}

// esm stands in for a lambda class's SQS event source mapping, which the emulator creates
// but never runs: it receives a batch from the class queue, invokes the function through
// RIE's Invoke API with the SQS event Lambda would send, and keeps ReportBatchItemFailures:
// it deletes only the messages the response does not list; the listed ones (released by the
// worker with their retry delay) come back for another receive, up to the redrive policy.
type esm struct {
	class         string
	sqs           *sqs.Client
	queueURL, arn string
	region        string
	invoke        string        // RIE's Invoke API address
	batch         int32         // the mapping's batch_size
	window        time.Duration // the mapping's maximum_batching_window
	timeout       time.Duration // the function's timeout
	ready         func() bool   // the class's RIE process is running (not paused, killed)
	say           func(string)
	client        *http.Client
}

func newESM(d *Fleet, a *ir.Agent, invoke string, ready func() bool) (*esm, error) {
	q := d.queues[a.Name]
	attrs, err := d.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.queue),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, fmt.Errorf("queue of %s: %w", a.Name, err)
	}
	e := &esm{class: a.Name, sqs: d.sqs, queueURL: q.queue, arn: attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)],
		region: d.ir.Region, invoke: invoke, batch: 1, timeout: awslimits.LambdaMaxTimeout, ready: ready}
	if l := a.Lambda; l != nil {
		e.batch, e.window, e.timeout = int32(min(max(l.BatchSize, 1), awslimits.SQSMaxBatch)), l.BatchingWindow, l.Timeout
	}
	e.client = &http.Client{Timeout: e.timeout + 10*time.Second}
	return e, nil
}

// run polls until ctx ends. It receives only while RIE answers, so a killed or paused class
// leaves its messages in the queue, as a throttled mapping would.
func (e *esm) run(ctx context.Context) {
	for ctx.Err() == nil {
		if !e.ready() || !answers("http://"+e.invoke) {
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		if err := e.once(ctx); err != nil && ctx.Err() == nil {
			e.say("fleetc dev (event source mapping): " + err.Error())
			sleep(ctx, time.Second)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// once moves one batch: receive, invoke, delete the successes.
func (e *esm) once(ctx context.Context) error {
	wait := int32(2)
	if e.window > 0 {
		wait = int32(min(max(e.window/time.Second, 1), 20))
	}
	r, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: e.batch,
		WaitTimeSeconds: wait, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames: []string{"All"}})
	if err != nil || len(r.Messages) == 0 {
		return err
	}
	ev := sqsevent.FromSQS(r.Messages, e.arn, e.region)
	body, _ := json.Marshal(ev)
	status, resp, err := e.call(ctx, body)
	if err != nil {
		return fmt.Errorf("invoke with %d message(s): %w; they return at the visibility timeout", len(ev.Records), err)
	}
	del, failed, whole := Settle(ev, status, resp)
	if whole != nil {
		e.say(fmt.Sprintf("fleetc dev (event source mapping): the whole batch of %d failed (%v); it returns at the visibility timeout", len(ev.Records), whole))
	} else if failed > 0 {
		e.say(fmt.Sprintf("fleetc dev (event source mapping): %d of %d reported in batchItemFailures: left in the queue for a retry", failed, len(ev.Records)))
	}
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, m := range r.Messages {
		if del[aws.ToString(m.MessageId)] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	out, err := e.sqs.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(e.queueURL), Entries: entries})
	if err != nil {
		return fmt.Errorf("deleting %d processed message(s): %w", len(entries), err)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("deleting processed messages: %d refused (%s)", len(out.Failed), aws.ToString(out.Failed[0].Message))
	}
	return nil
}

// call posts one event to RIE's Invoke API and returns its status and body.
func (e *esm) call(ctx context.Context, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, "http://"+e.invoke+rieInvokePath, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, awslimits.LambdaSyncResponseBytes))
	return resp.StatusCode, b, err
}

// Settle reads a function's answer to an SQS batch as an event source mapping with
// ReportBatchItemFailures does: a function error (any status but 200, or an errorType in
// the body), a body that is not a batch response, or an itemIdentifier that is empty or
// not in the batch fail the whole batch (whole != nil, nothing deleted); otherwise every
// message not listed is deleted. failed counts the listed ones.
func Settle(ev sqsevent.Event, status int, body []byte) (del map[string]bool, failed int, whole error) {
	if status != http.StatusOK {
		return nil, 0, fmt.Errorf("function error: status %d %s", status, bytes.TrimSpace(body))
	}
	var fe struct {
		ErrorType string `json:"errorType"`
	}
	if json.Unmarshal(body, &fe) == nil && fe.ErrorType != "" {
		return nil, 0, fmt.Errorf("function error %s", fe.ErrorType)
	}
	var resp *sqsevent.Response
	if t := bytes.TrimSpace(body); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(t, &resp); err != nil {
			return nil, 0, fmt.Errorf("the response is not a batch response: %w", err)
		}
	}
	in := map[string]bool{}
	for _, r := range ev.Records {
		in[r.MessageID] = true
	}
	listed := map[string]bool{}
	if resp != nil {
		for _, f := range resp.BatchItemFailures {
			if f.ItemIdentifier == "" || !in[f.ItemIdentifier] {
				return nil, 0, errors.New("batchItemFailures names an itemIdentifier that is not in the batch: " + strconv.Quote(f.ItemIdentifier))
			}
			listed[f.ItemIdentifier] = true
		}
	}
	del = map[string]bool{}
	for id := range in {
		if !listed[id] {
			del[id] = true
		}
	}
	return del, len(listed), nil
}
