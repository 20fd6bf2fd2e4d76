package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/callback"
	"github.com/fleetc/fleetc/runtime/claimcheck"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/llm"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/step"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/tools"
)

// EnvDisableDynamoCRC32 turns off DynamoDB response CRC32 checks; kumo sends
// none. Never set it against AWS.
const EnvDisableDynamoCRC32 = "FLEET_DYNAMODB_DISABLE_CRC32"

// Runtime is a fully wired worker: clients, handler, stores.
type Runtime struct {
	Cfg     *config.Config
	Worker  *Worker
	SQS     *sqs.Client
	Events  *events.Batcher // nil when the class emits nothing
	Counter *awsconfig.RequestCounter
	Log     *slog.Logger
	Tel     *telemetry.Telemetry // nil: no spans or metrics
	Models  *router.Router       // nil: the class has no model policy
	Gateway *gateway.Gateway     // nil: no exec handler to serve
}

// Host is rt as the transports outside this package (Lambda, AgentCore, the dispatcher) see it.
func (rt *Runtime) Host() step.Host {
	return step.Host{Cfg: rt.Cfg, Worker: rt.Worker, Callbacks: rt.Worker.Callbacks, SQS: rt.SQS, Counter: rt.Counter, Log: rt.Log}
}

// BuildOptions tune Build.
type BuildOptions struct {
	Getenv  func(string) string
	Logger  *slog.Logger
	Handler handler.Options
	// Telemetry, when set, gets spans, step metrics and AWS request counts.
	Telemetry *telemetry.Telemetry
	// NoQueue skips resolving queue URLs (AgentCore mode has no queue).
	NoQueue bool
	// AWSOptions overrides parts of the aws.Config load (tests: kumo).
	AWSOptions awsconfig.Options
}

// Build wires a Runtime for cfg: AWS clients, queue URLs, idempotency store,
// claim check, events batcher, callbacks, handler. Every failure here is a
// startup error: no message has been touched.
func Build(ctx context.Context, cfg *config.Config, o BuildOptions) (*Runtime, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	counter := o.AWSOptions.Counter
	if counter == nil {
		counter = awsconfig.NewRequestCounter()
	}
	if o.Telemetry != nil && counter.OnRequest == nil {
		counter.OnRequest = o.Telemetry.Metrics.CountAWSRequest
	}
	ao := o.AWSOptions
	ao.Counter = counter
	if ao.Region == "" {
		ao.Region = cfg.Region
	}
	awsCfg, err := awsconfig.Load(ctx, ao)
	if err != nil {
		return nil, err
	}
	models, err := newRouter(ctx, cfg, awsCfg, getenv, o.Telemetry)
	if err != nil {
		return nil, err
	}
	ddb := awsconfig.DynamoDB(awsCfg)
	if isTrue(getenv(EnvDisableDynamoCRC32)) {
		ddb = awsconfig.DynamoDB(awsCfg, awsconfig.WithoutCRC32)
	}
	eventTools, asyncToolsUsed := llmToolKinds(cfg.Handler)
	var batcher *events.Batcher
	if len(cfg.Events.Emits) > 0 || eventTools {
		if batcher, err = events.New(awsconfig.EventBridge(awsCfg), events.Config{Bus: cfg.Events.Bus, BusModel: cfg.Events.BusModel, MaxEntries: cfg.Events.MaxEntries}); err != nil {
			return nil, err
		}
	}
	hopts := o.Handler
	if hopts.LLM == nil {
		var pub llm.Publisher
		if batcher != nil {
			pub = batcher
		}
		var async *tools.Service
		if asyncToolsUsed {
			if async, err = asyncTools(cfg, ddb, awsconfig.EventBridge(awsCfg)); err != nil {
				return nil, err
			}
		}
		hopts.LLM = llmFactory(models, cfg, pub, async)
	}
	if hopts.Stderr == nil {
		hopts.Stderr = StderrLogger(log)
	}
	h, err := handler.New(cfg, hopts)
	if err != nil {
		return nil, err
	}
	if ex, ok := h.(*handler.Exec); ok && len(cfg.Handler.Secrets) > 0 {
		if ex.Secrets, err = handlerSecrets(ctx, cfg.Handler.Secrets, awsCfg, getenv); err != nil {
			return nil, err
		}
	}
	sqsc := awsconfig.SQS(awsCfg)
	if !o.NoQueue {
		if cfg.QueueURL == "" {
			if cfg.QueueURL, err = queueURL(ctx, sqsc, cfg.Queue.Name); err != nil {
				return nil, err
			}
		}
		if cfg.DLQURL == "" {
			if cfg.DLQURL, err = queueURL(ctx, sqsc, cfg.Queue.DLQName); err != nil {
				return nil, err
			}
		}
	}
	w := &Worker{
		Cfg:       cfg,
		Handler:   h,
		Idem:      &idem.Dynamo{API: ddb, Table: cfg.Idempotency.Table, Class: cfg.Class, Window: cfg.Idempotency.Window()},
		Callbacks: callback.New(awsconfig.SFN(awsCfg)),
		Log:       log,
		Telemetry: o.Telemetry,
	}
	if cfg.Jobs != nil {
		w.Jobs = &DynamoJobs{API: ddb, Table: cfg.Jobs.Table}
	}
	if cfg.ClaimCheck.Bucket != "" {
		store := claimcheck.New(awsconfig.S3(awsCfg), cfg.ClaimCheck.Bucket, cfg.ClaimCheck.ThresholdBytes)
		// The fleet's bucket, the class's prefixes, and the account that owns the class's
		// queue (Terraform creates queue and bucket in one account).
		store.ReadPrefixes, store.Owner = cfg.ClaimCheck.ReadPrefixes, queueAccount(cfg.QueueURL)
		w.Payloads = store
	}
	// Event contracts are compiled once, before any message is touched.
	if err := w.CompileContracts(); err != nil {
		return nil, err
	}
	// The gateway starts last: nothing after it can fail, so its listener never leaks.
	gw, err := startGateway(models, cfg, h, getenv, o.Telemetry)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{Cfg: cfg, Worker: w, SQS: sqsc, Counter: counter, Log: log, Tel: o.Telemetry, Models: models, Gateway: gw}
	if batcher != nil {
		rt.Events = batcher
		if len(cfg.Events.Emits) > 0 {
			w.Events = batcher
		}
	}
	return rt, nil
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// queueAccount is the account ID in an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>), or "".
func queueAccount(queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil {
		return ""
	}
	seg := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(seg) != 2 || len(seg[0]) != 12 || strings.Trim(seg[0], "0123456789") != "" {
		return ""
	}
	return seg[0]
}

// queueURL resolves a queue name; a missing queue is a startup error.
func queueURL(ctx context.Context, c *sqs.Client, name string) (string, error) {
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		// kumo reports a missing queue only by its error code string.
		if strings.Contains(err.Error(), "NonExistentQueue") || strings.Contains(err.Error(), "QueueDoesNotExist") {
			return "", fmt.Errorf("queue %q does not exist (set FLEET_QUEUE_URL / FLEET_DLQ_URL or create it): %w", name, err)
		}
		return "", fmt.Errorf("resolve queue %q: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// Close flushes the events batcher (after the queue has drained).
func (rt *Runtime) Close(ctx context.Context) error {
	if err := closeGateway(ctx, rt.Gateway); err != nil {
		rt.Log.Warn("model gateway close", "err", err)
	}
	if rt.Events != nil {
		return rt.Events.Close(ctx)
	}
	return nil
}

// RunPoll runs the SQS poller until ctx ends, then drains.
func (rt *Runtime) RunPoll(ctx context.Context, drain time.Duration) error {
	c, err := rt.Worker.NewPoller(rt.SQS, PollOptions{QueueURL: rt.Cfg.QueueURL, DLQURL: rt.Cfg.DLQURL, DrainTimeout: drain, Logger: rt.Log})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// StderrLogger logs each line of a handler's stderr at info level with the step's class,
// trace id and attempt, in every mode, so what a handler printed is seen when it succeeds too.
func StderrLogger(log *slog.Logger) handler.StderrFunc {
	return func(req handler.Request, line string) {
		log.Info("handler stderr", "class", req.Class, "trace_id", req.TraceID, "attempt", req.Attempt, "line", line)
	}
}
