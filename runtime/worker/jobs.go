package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Job statuses of the async-tool jobs table (async-tools-eventbridge.txt: the start tool
// writes QUEUED; the worker moves it RUNNING -> SUCCEEDED | FAILED).
const (
	JobRunning   = "RUNNING"
	JobSucceeded = "SUCCEEDED"
	JobFailed    = "FAILED"
)

// JobResult is what a finished job's record carries for the status tool.
type JobResult struct {
	ArtifactURI string // the handler output's artifactUri, when it has one
	ResultRef   string // JSON claim-check reference, when the output was offloaded
	Result      string // the output itself, when small (jobSummaryMax)
}

// jobSummaryMax bounds the inline result copied into the job record: the status tool
// returns small terminal payloads; larger outputs stay in the idempotency record or S3.
const jobSummaryMax = 4096

// Jobs keeps an async tool's job record current.
type Jobs interface {
	// Running marks the job RUNNING unless it is already terminal (ErrJobTerminal).
	Running(ctx context.Context, jobID string) error
	Succeeded(ctx context.Context, jobID string, r JobResult) error
	// Failed marks the job FAILED unless it already SUCCEEDED (ErrJobTerminal).
	Failed(ctx context.Context, jobID, message string) error
}

// ErrJobTerminal reports that a conditional status write found the job finished.
var ErrJobTerminal = errors.New("job already finished")

// JobsAPI is the part of the DynamoDB client DynamoJobs uses.
type JobsAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// DynamoJobs is Jobs on the fleet's jobs table (pk S = "JOB#<jobId>").
type DynamoJobs struct {
	API   JobsAPI
	Table string
	Now   func() time.Time
}

func (d *DynamoJobs) now() string {
	t := time.Now()
	if d.Now != nil {
		t = d.Now()
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func jobKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "JOB#" + id}}
}

func sAttr(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func (d *DynamoJobs) update(ctx context.Context, id, expr, cond string, vals map[string]types.AttributeValue) error {
	vals[":now"] = sAttr(d.now())
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       jobKey(id),
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: vals,
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	_, err := d.API.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ErrJobTerminal
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	return nil
}

// Running sets RUNNING; a duplicate delivery of finished work must not move a terminal job back.
func (d *DynamoJobs) Running(ctx context.Context, id string) error {
	return d.update(ctx, id, "SET #s = :running, updatedAt = :now",
		"attribute_not_exists(#s) OR (#s <> :ok AND #s <> :failed)",
		map[string]types.AttributeValue{":running": sAttr(JobRunning), ":ok": sAttr(JobSucceeded), ":failed": sAttr(JobFailed)})
}

// Succeeded sets SUCCEEDED with the result fields. Unconditional: the result is stored, so
// this is the truth even after a FAILED from an earlier, dead-lettered attempt (DLQ redrive).
func (d *DynamoJobs) Succeeded(ctx context.Context, id string, r JobResult) error {
	expr := "SET #s = :ok, updatedAt = :now"
	vals := map[string]types.AttributeValue{":ok": sAttr(JobSucceeded)}
	for _, f := range []struct{ attr, val string }{{"artifactUri", r.ArtifactURI}, {"result_ref", r.ResultRef}, {"result", r.Result}} {
		if f.val != "" {
			expr += ", " + f.attr + " = :" + f.attr
			vals[":"+f.attr] = sAttr(f.val)
		}
	}
	expr += " REMOVE errorMessage"
	return d.update(ctx, id, expr, "", vals)
}

// Failed sets FAILED with the error, unless the job already SUCCEEDED (its result is stored;
// a later dead letter, e.g. a rejected completion event, does not undo it).
func (d *DynamoJobs) Failed(ctx context.Context, id, message string) error {
	if message == "" {
		message = "failed"
	}
	return d.update(ctx, id, "SET #s = :failed, errorMessage = :msg, updatedAt = :now",
		"attribute_not_exists(#s) OR #s <> :ok",
		map[string]types.AttributeValue{":failed": sAttr(JobFailed), ":ok": sAttr(JobSucceeded), ":msg": sAttr(message)})
}

// jobID is the job id in detail's id field ("" when jobs are off or the field is absent).
func (w *Worker) jobID(detail json.RawMessage) string {
	if w.Jobs == nil || w.Cfg.Jobs == nil || w.Cfg.Jobs.IDField == "" {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(detail, &m) != nil {
		return ""
	}
	raw, ok := m[w.Cfg.Jobs.IDField]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// jobWriteAttempts bounds the retries of one status write; the terminal writes that still
// fail release the message (the record is done, so the redelivery repeats only the write).
const jobWriteAttempts = 4

// writeJob runs op with jittered retries; shutdown does not cut a status write short.
func (w *Worker) writeJob(ctx context.Context, what, id string, op func(context.Context) error) error {
	pol := retry.Policy{Base: 100 * time.Millisecond, Cap: time.Second}
	var err error
	for i := 0; i < jobWriteAttempts; i++ {
		if i > 0 {
			time.Sleep(pol.Backoff(i - 1))
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = op(wctx)
		cancel()
		if err == nil || errors.Is(err, ErrJobTerminal) {
			return err
		}
		w.log().Warn("job status write failed; retrying", "job", id, "status", what, "attempt", i+1, "err", err)
	}
	return err
}

// jobRunning marks the job RUNNING before the handler. Advisory: a failure is logged and the
// step runs anyway (the terminal write is the one the status tool waits on).
func (w *Worker) jobRunning(ctx context.Context, id string) {
	if id == "" {
		return
	}
	err := w.writeJob(ctx, JobRunning, id, func(c context.Context) error { return w.Jobs.Running(c, id) })
	switch {
	case errors.Is(err, ErrJobTerminal):
		w.log().Info("job already finished; status left as is", "job", id)
	case err != nil:
		w.log().Warn("could not mark job RUNNING", "job", id, "err", err)
	}
}

// jobSucceeded records the stored result; nil or a Release verdict when the write failed.
func (w *Worker) jobSucceeded(ctx context.Context, id string, s storedResult) *Result {
	if id == "" {
		return nil
	}
	var r JobResult
	if s.ResultRef != nil {
		b, _ := json.Marshal(s.ResultRef)
		r.ResultRef = string(b)
	} else if len(s.Result) > 0 && string(s.Result) != "null" {
		var out struct {
			ArtifactURI string `json:"artifactUri"`
		}
		if json.Unmarshal(s.Result, &out) == nil {
			r.ArtifactURI = out.ArtifactURI
		}
		if len(s.Result) <= jobSummaryMax {
			r.Result = string(s.Result)
		}
	}
	err := w.writeJob(ctx, JobSucceeded, id, func(c context.Context) error { return w.Jobs.Succeeded(c, id, r) })
	if err != nil {
		res := w.release(&retry.Error{Code: wire.JobStatusFailed, Message: err.Error(), Retryable: true, Err: err}, 1)
		return &res
	}
	return nil
}

// jobFailed records a dead letter's reason. The message is gone to the DLQ either way, so a
// write that still fails after its retries is only logged.
func (w *Worker) jobFailed(ctx context.Context, id string, reason *retry.Error) {
	if id == "" {
		return
	}
	msg := "dead-lettered"
	if reason != nil {
		msg = string(reason.Code)
		if reason.Message != "" {
			msg += ": " + reason.Message
		}
	}
	err := w.writeJob(ctx, JobFailed, id, func(c context.Context) error { return w.Jobs.Failed(c, id, msg) })
	switch {
	case errors.Is(err, ErrJobTerminal):
		w.log().Info("job already SUCCEEDED; dead letter not recorded as FAILED", "job", id)
	case err != nil:
		w.log().Error("could not mark job FAILED", "job", id, "err", err)
	}
}
