// Package step is the contract between the worker's step pipeline and the transports that
// feed it (the SQS poller, Lambda, AgentCore, the AgentCore dispatcher): a delivery in, a
// verdict out, and the few things a transport asks of the worker. It is a leaf beside
// runtime/wire so a transport imports neither the worker nor the handlers, stores and model
// router behind it.
package step

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Delivery is one message handed to Process.
type Delivery struct {
	MessageID   string
	Body        []byte
	Attempt     int    // 1-based receive count
	TraceParent string // W3C, from the traceparent message attribute
	// SentAt is when the queue accepted the message (SQS SentTimestamp): a bare detail's
	// ttl_seconds counts from it. Zero for direct invocations, which have no such clock.
	SentAt time.Time
	// InvocationDeadline bounds this delivery's processing (Lambda: the
	// invocation's deadline); passing it is retryable, unlike the run's
	// own deadline carried in the message.
	InvocationDeadline time.Time
}

// DeliveryOf is the delivery of one SQS message (poller and Lambda batches alike).
func DeliveryOf(m *queue.Message) Delivery {
	d := Delivery{MessageID: m.ID, Body: []byte(m.Body), Attempt: m.ReceiveCount, SentAt: m.SentAt()}
	if tp, ok := m.MessageAttributes[telemetry.AttrTraceparent]; ok {
		d.TraceParent = aws.ToString(tp.StringValue)
	}
	return d
}

// Result is Process's verdict plus the output, for modes that answer.
type Result struct {
	queue.Outcome
	Output    json.RawMessage
	Duplicate bool
}

// Worker is what a transport asks of the step pipeline.
type Worker interface {
	// Process runs one delivery to a verdict; it never loses the message (see queue.Outcome).
	Process(ctx context.Context, d Delivery) Result
	// GroupOf is a FIFO message's group when the queue does not carry one (the class's group_by).
	GroupOf(m *queue.Message) string
	// Concurrency is how many deliveries may run at once.
	Concurrency() int
	// Logger is the worker's logger (nil: none).
	Logger() *slog.Logger
	// RenewItself makes Process renew its own idempotency lease and Step Functions heartbeat
	// (modes without a poller heartbeat: Lambda, AgentCore).
	RenewItself()
}

// Callbacks answers Step Functions task tokens.
type Callbacks interface {
	Success(ctx context.Context, token string, output []byte) error
	Failure(ctx context.Context, token, errorCode, cause string) error
	Heartbeat(ctx context.Context, token string) error
}

// Host is a wired worker as a transport's Run sees it: its config, the pipeline, the class
// queue's client and the AWS request counter.
type Host struct {
	Cfg       *config.Config
	Worker    Worker
	Callbacks Callbacks // nil: SFN task messages are dead-lettered
	SQS       *sqs.Client
	Counter   *awsconfig.RequestCounter
	Log       *slog.Logger
}

// Fairness is the consumer options of cfg's per-tenant cap (none when cfg has no fairness):
// the key read from each message's detail, the cap, and a first deferral of one typical
// step (step.p95), when a slot of the key is likely free again.
func Fairness(cfg *config.Config) (keyOf func(*queue.Message) string, maxPerKey int, deferDelay time.Duration) {
	fa := cfg.Fairness
	if fa == nil {
		return nil, 0, 0
	}
	keyOf = func(m *queue.Message) string {
		env, err := wire.ParseEnvelope([]byte(m.Body))
		if err != nil {
			return ""
		}
		return wire.DetailField(env.Detail, fa.Key)
	}
	return keyOf, fa.MaxInFlightPerKey, time.Duration(cfg.Step.P95Seconds) * time.Second
}
