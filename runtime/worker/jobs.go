package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/fleetc/fleetc/runtime/jobstore"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/schemas/jobs"
)

// Job statuses the worker writes (schemas/jobs: the start tool writes QUEUED; the worker
// moves it RUNNING -> SUCCEEDED | FAILED, never out of SUCCEEDED or FAILED).
const (
	JobRunning   = string(jobs.Running)
	JobSucceeded = string(jobs.Succeeded)
	JobFailed    = string(jobs.Failed)
)

// JobResult is what a finished job's record carries for the status tool.
type JobResult = jobstore.Result

// jobSummaryMax bounds the inline result copied into the job record: the status tool
// returns small terminal payloads; larger outputs stay in the idempotency record or S3.
const jobSummaryMax = 4096

// Jobs keeps an async tool's job record current.
type Jobs interface {
	// Running marks the job RUNNING unless it is finished (ErrJobTerminal).
	Running(ctx context.Context, jobID string) error
	// Succeeded marks the job SUCCEEDED unless it is finished (ErrJobTerminal).
	Succeeded(ctx context.Context, jobID string, r JobResult) error
	// Failed marks the job FAILED unless it is finished (ErrJobTerminal).
	Failed(ctx context.Context, jobID, message string) error
}

// ErrJobTerminal reports that a conditional status write found the job finished.
var ErrJobTerminal = jobstore.ErrFinished

// JobsAPI is the part of the DynamoDB client DynamoJobs uses.
type JobsAPI = jobstore.Updater

// DynamoJobs is Jobs on the fleet's jobs table (schemas/jobs.Record, written by
// runtime/jobstore, the same code the tools use).
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
	return jobs.FormatTime(t)
}

func (d *DynamoJobs) mover() *jobstore.Mover { return &jobstore.Mover{API: d.API, Table: d.Table} }

// Running sets RUNNING; a duplicate delivery of finished work must not move a terminal job back.
func (d *DynamoJobs) Running(ctx context.Context, id string) error {
	return d.mover().Running(ctx, id, d.now())
}

// Succeeded sets SUCCEEDED with the result fields. A job already FAILED stays FAILED: the
// agent was told to replan, and its result would now contradict that (a redriven dead
// letter's output still reaches its completion event).
func (d *DynamoJobs) Succeeded(ctx context.Context, id string, r JobResult) error {
	return d.mover().Succeeded(ctx, id, r, d.now())
}

// Failed sets FAILED with the error, unless the job already finished.
func (d *DynamoJobs) Failed(ctx context.Context, id, message string) error {
	return d.mover().Failed(ctx, id, message, d.now())
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
	pol := w.backoff(100*time.Millisecond, time.Second)
	var err error
	for i := 0; i < jobWriteAttempts; i++ {
		if i > 0 {
			_ = w.wait(context.WithoutCancel(ctx), pol.Backoff(i-1))
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
	if errors.Is(err, ErrJobTerminal) {
		w.log().Info("job already finished; result not recorded", "job", id)
		return nil
	}
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
		w.log().Info("job already finished; dead letter not recorded as FAILED", "job", id)
	case err != nil:
		w.log().Error("could not mark job FAILED", "job", id, "err", err)
	default:
		// The failed-jobs alarm's metric filter counts this line (schemas/jobs.LogFailed).
		w.log().Warn(jobs.LogFailed, "class", w.Cfg.Class, "job", id, "reason", msg)
	}
}
