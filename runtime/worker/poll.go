package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/step"
)

// PollOptions tune the long-running SQS poller.
type PollOptions struct {
	QueueURL, DLQURL string
	DrainTimeout     time.Duration
	Logger           *slog.Logger
}

// NewPoller wires w into an SQS consumer configured from w.Cfg.
func (w *Worker) NewPoller(api queue.API, o PollOptions) (*queue.Consumer, error) {
	q := w.Cfg.Queue
	keyOf, maxPerKey, deferDelay := step.Fairness(w.Cfg)
	return queue.New(api, queue.Options{
		QueueURL:          o.QueueURL,
		DLQURL:            o.DLQURL,
		FIFO:              q.FIFO,
		MaxMessages:       q.MaxMessages,
		WaitTime:          q.WaitTime(),
		VisibilityTimeout: q.VisibilityTimeout(),
		Heartbeat:         q.Heartbeat(),
		Concurrency:       w.Cfg.Concurrency,
		DrainTimeout:      o.DrainTimeout,
		GroupOf:           w.GroupOf,
		KeyOf:             keyOf,
		MaxPerKey:         maxPerKey,
		DeferDelay:        deferDelay,
		OnHeartbeat: func(ctx context.Context, msgs []*queue.Message) {
			ids := make([]string, len(msgs))
			for i, m := range msgs {
				ids[i] = m.ID
			}
			w.Heartbeat(ctx, ids)
		},
		Logger: o.Logger,
	}, w.ProcessMessage)
}

// ProcessMessage adapts Process to queue.ProcessFunc.
func (w *Worker) ProcessMessage(ctx context.Context, m *queue.Message) queue.Outcome {
	return w.Process(ctx, step.DeliveryOf(m)).Outcome
}
