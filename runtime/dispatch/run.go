package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockagentcore"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/lambda"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/step"
)

// DefaultSyncLimit applies when the config has no agentcore section: under AgentCore's
// 15-minute synchronous limit.
const DefaultSyncLimit = 14 * time.Minute

// New builds the dispatcher of cfg's class around api.
func New(cfg *config.Config, api API, runtimeARN string) (*Dispatcher, error) {
	if runtimeARN == "" {
		return nil, fmt.Errorf("dispatch: %s is not set: the AgentCore runtime to invoke", config.EnvAgentRuntimeARN)
	}
	d := &Dispatcher{
		API: api, RuntimeARN: runtimeARN, Class: cfg.Class,
		SessionField: cfg.Queue.GroupBy, SyncLimit: DefaultSyncLimit,
		Policy: retry.Policy{MaxAttempts: cfg.RetryLimit(), Base: cfg.Retry.Base(), Cap: cfg.Retry.Cap()},
	}
	if ac := cfg.AgentCore; ac != nil {
		d.Qualifier, d.SessionField, d.SyncLimit = ac.Qualifier, ac.SessionField, ac.SyncLimit()
	}
	// The runtime ends the step at step.max; holding for a sync limit more covers the answer.
	d.Hold = cfg.Step.Max() + d.SyncLimit
	return d, nil
}

// Client builds the bedrock-agentcore client: SDK retries off (the queue retries), and a
// response-header timeout long enough for a synchronous step. endpoint overrides the data
// plane (tests); "" = AWS.
func Client(ctx context.Context, region, endpoint string, syncLimit time.Duration, counter *awsconfig.RequestCounter) (*bedrockagentcore.Client, error) {
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: region, MaxAttempts: 1, Counter: counter,
		ResponseHeaderTimeout: syncLimit + 2*callMargin})
	if err != nil {
		return nil, err
	}
	return bedrockagentcore.NewFromConfig(cfg, func(o *bedrockagentcore.Options) {
		o.BaseEndpoint = nil
		if endpoint != "" {
			o.BaseEndpoint = &endpoint
		}
	}), nil
}

// Run feeds the runtime from rt's class queue until ctx ends: as a Lambda function behind
// the queue's event source mapping when AWS_LAMBDA_RUNTIME_API is set, else as a long-running
// poller whose heartbeat holds a message for as long as its step runs (up to SQS's 12 h).
func Run(ctx context.Context, h step.Host, getenv func(string) string, drain time.Duration) error {
	cfg := h.Cfg
	sync := DefaultSyncLimit
	if cfg.AgentCore != nil {
		sync = cfg.AgentCore.SyncLimit()
	}
	client, err := Client(ctx, cfg.Region, getenv(config.EnvAgentCoreURL), sync, h.Counter)
	if err != nil {
		return err
	}
	d, err := New(cfg, client, getenv(config.EnvAgentRuntimeARN))
	if err != nil {
		return err
	}
	d.Log = h.Log
	if h.Callbacks != nil {
		d.Tasks = h.Callbacks
	}
	if getenv(lambda.EnvRuntimeAPI) != "" {
		l := &lambda.Loop{API: getenv(lambda.EnvRuntimeAPI), Handler: &lambda.Handler{
			Worker: h.Worker, SQS: h.SQS, QueueURL: cfg.QueueURL, DLQURL: cfg.DLQURL, FIFO: cfg.Queue.FIFO, Process: d.Dispatch}}
		return l.Run(ctx)
	}
	c, err := NewPoller(d, h, drain)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// NewPoller is the poll-mode consumer: the class queue's settings, a visibility heartbeat
// (a third of the visibility timeout when the config has none) so busy steps keep their
// message, and d as the ProcessFunc.
func NewPoller(d *Dispatcher, h step.Host, drain time.Duration) (*queue.Consumer, error) {
	q := h.Cfg.Queue
	if h.Cfg.QueueURL == "" {
		return nil, errors.New("dispatch: no queue URL")
	}
	keyOf, maxPerKey, deferDelay := step.Fairness(h.Cfg)
	return queue.New(h.SQS, queue.Options{
		KeyOf: keyOf, MaxPerKey: maxPerKey, DeferDelay: deferDelay,
		QueueURL: h.Cfg.QueueURL, DLQURL: h.Cfg.DLQURL, FIFO: q.FIFO, MaxMessages: q.MaxMessages,
		WaitTime: q.WaitTime(), VisibilityTimeout: q.VisibilityTimeout(), Heartbeat: q.RenewEvery(),
		Concurrency: h.Cfg.Concurrency, DrainTimeout: drain, GroupOf: h.Worker.GroupOf, Logger: h.Log,
	}, d.ProcessMessage)
}
