package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// MaxManagedRate is SQS's ceiling for MaxNumberOfMessagesPerSecond.
const MaxManagedRate = 500

// Task is a managed redrive (an SQS message move task) as ListMessageMoveTasks reports it.
type Task struct {
	Handle        string
	Status        string // RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED
	Moved, ToMove int64
	Failure       string
}

// Done reports whether the task has ended.
func (t Task) Done() bool {
	switch t.Status {
	case "COMPLETED", "CANCELLED", "FAILED":
		return true
	}
	return false
}

// ErrNoManagedRedrive means the endpoint does not implement the message move task API (an
// emulator such as kumo): move message by message instead.
var ErrNoManagedRedrive = errors.New("the endpoint has no managed redrive (StartMessageMoveTask)")

// unsupported reports an endpoint that does not know the action.
func unsupported(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "InvalidAction", "UnknownOperationException", "UnsupportedOperation", "NotImplemented":
		return true
	}
	return false
}

// ManagedOptions pace and report a managed redrive.
type ManagedOptions struct {
	Rate     int           // MaxNumberOfMessagesPerSecond (0: SQS optimizes it)
	Interval time.Duration // ListMessageMoveTasks polling (0: 2 s)
	Progress func(Task)
}

// Redrive starts SQS's managed redrive from t's DLQ to its class queue (named explicitly:
// the worker, not SQS, dead-letters, so SQS does not know the letters' source), reports
// progress until the task ends, and cancels it when ctx ends (Ctrl-C). The returned task
// is its last known state.
func Redrive(ctx context.Context, api API, t *Target, o ManagedOptions) (Task, error) {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	src, err := queueARN(ctx, api, t.DLQURL)
	if err != nil {
		return Task{}, err
	}
	dst, err := queueARN(ctx, api, t.QueueURL)
	if err != nil {
		return Task{}, err
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(src), DestinationArn: aws.String(dst)}
	if o.Rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(min(o.Rate, MaxManagedRate)))
	}
	out, err := api.StartMessageMoveTask(ctx, in)
	if err != nil {
		if unsupported(err) {
			return Task{}, fmt.Errorf("%w: %v", ErrNoManagedRedrive, err)
		}
		return Task{}, fmt.Errorf("StartMessageMoveTask: %w", err)
	}
	task := Task{Handle: aws.ToString(out.TaskHandle), Status: "RUNNING"}
	for {
		select {
		case <-ctx.Done():
			return cancelTask(api, src, task)
		case <-time.After(o.Interval):
		}
		cur, err := latestTask(ctx, api, src)
		if err != nil {
			if ctx.Err() != nil {
				return cancelTask(api, src, task)
			}
			return task, err
		}
		cur.Handle = task.Handle
		task = cur
		if o.Progress != nil {
			o.Progress(task)
		}
		if task.Done() {
			if task.Status == "FAILED" {
				return task, fmt.Errorf("the message move task failed: %s", task.Failure)
			}
			return task, nil
		}
	}
}

// cancelTask cancels a running task after Ctrl-C and returns its state.
func cancelTask(api API, src string, task Task) (Task, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := api.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(task.Handle)})
	if err != nil {
		return task, fmt.Errorf("interrupted; CancelMessageMoveTask failed (%w): cancel it in the console or with aws sqs cancel-message-move-task --task-handle %s", err, task.Handle)
	}
	task.Moved = out.ApproximateNumberOfMessagesMoved
	task.Status = "CANCELLING"
	if cur, err := latestTask(ctx, api, src); err == nil {
		cur.Handle = task.Handle
		task = cur
	}
	return task, context.Canceled
}

// latestTask is the most recent move task of src (ListMessageMoveTasks lists newest first).
func latestTask(ctx context.Context, api API, src string) (Task, error) {
	out, err := api.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(src), MaxResults: aws.Int32(1)})
	if err != nil {
		return Task{}, fmt.Errorf("ListMessageMoveTasks: %w", err)
	}
	if len(out.Results) == 0 {
		return Task{}, errors.New("ListMessageMoveTasks lists no task for the DLQ")
	}
	r := out.Results[0]
	return Task{Handle: aws.ToString(r.TaskHandle), Status: aws.ToString(r.Status),
		Moved: r.ApproximateNumberOfMessagesMoved, ToMove: aws.ToInt64(r.ApproximateNumberOfMessagesToMove),
		Failure: aws.ToString(r.FailureReason)}, nil
}

func queueARN(ctx context.Context, api API, url string) (string, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", fmt.Errorf("queue ARN of %s: %w", url, err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("queue %s reports no QueueArn", url)
	}
	return arn, nil
}
