// Package dlq is fleetc's dead-letter tooling: peek at a class's DLQ grouped by why its
// messages died (the ERROR_CODE fleet-worker writes), and move them back to the class queue,
// by SQS's managed redrive or message by message (filtered, rate-limited, canaried). Queue
// names and the idempotency table come from the class's runtime config, the one the worker
// itself runs with, so the tool and the worker can never disagree on a name.
package dlq

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// Target is one class's queue, DLQ and idempotency policy, as its runtime config names them.
type Target struct {
	Class     string
	Queue     string // names
	DLQ       string
	FIFO      bool
	GroupBy   string   // FIFO: the detail field naming a message's group
	Table     string   // idempotency table
	KeyFields []string // idempotency key fields (empty: the event id)
	Window    int64    // idempotency window, seconds

	QueueURL, DLQURL string // filled by Resolve

	delivery              bool // the DLQ is the bus's delivery DLQ (see DeliveryOf)
	classDLQ, classDLQURL string
}

// Targets are the classes of f (all of them for class "", in spec order), or an error
// naming the classes that exist.
func Targets(f *ir.Fleet, class string) ([]*Target, error) {
	var out []*Target
	var names []string
	for _, a := range f.Agents {
		names = append(names, a.Name)
		if class != "" && a.Name != class {
			continue
		}
		c, err := runtimeconfig.Build(f, a)
		if err != nil {
			return nil, fmt.Errorf("class %s: %w", a.Name, err)
		}
		out = append(out, fromConfig(c))
	}
	if len(out) == 0 {
		sort.Strings(names)
		return nil, fmt.Errorf("fleet %s has no class %q; its classes: %s", f.Name, class, strings.Join(names, ", "))
	}
	return out, nil
}

func fromConfig(c *rc.Config) *Target {
	return &Target{Class: c.Class, Queue: c.Queue.Name, DLQ: c.Queue.DLQName, FIFO: c.Queue.FIFO,
		GroupBy: c.Queue.GroupBy, Table: c.Idempotency.Table, KeyFields: c.Idempotency.Key,
		Window: c.Idempotency.WindowSeconds}
}

// Resolve looks up both queue URLs (and, for the delivery DLQ, the class DLQ's).
func (t *Target) Resolve(ctx context.Context, api API) error {
	if t.delivery && t.classDLQURL == "" {
		class := *t
		class.DLQ, class.delivery = t.classDLQ, false
		if err := class.Resolve(ctx, api); err != nil {
			return err
		}
		t.classDLQURL = class.DLQURL
	}
	for _, q := range []struct {
		name string
		url  *string
	}{{t.Queue, &t.QueueURL}, {t.DLQ, &t.DLQURL}} {
		out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.name)})
		if err != nil {
			// kumo reports a missing queue only by its error code string.
			var missing *types.QueueDoesNotExist
			if errors.As(err, &missing) || strings.Contains(err.Error(), "NonExistentQueue") || strings.Contains(err.Error(), "QueueDoesNotExist") {
				return fmt.Errorf("class %s: queue %s does not exist (is the fleet applied, in this region and account?)", t.Class, q.name)
			}
			return fmt.Errorf("class %s: resolve queue %s: %w", t.Class, q.name, err)
		}
		*q.url = aws.ToString(out.QueueUrl)
	}
	return nil
}

// API is the part of the SQS client the DLQ tools use.
type API interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}
