// Package queue is the SQS consumer: long-poll batches with bounded
// concurrency, a batched visibility heartbeat for every in-flight message,
// batched deletes, FIFO groups in order, jittered releases, and a DLQ path
// that records why. What a message means is the ProcessFunc's business.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/schemas/awslimits"
)

// API is the part of the SQS client the consumer uses.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Message is one received SQS message.
type Message struct {
	ID           string
	Receipt      string
	Body         string
	ReceiveCount int    // ApproximateReceiveCount: the 1-based attempt
	GroupID      string // MessageGroupId (FIFO); see Options.GroupOf
	Attributes   map[string]string
	// MessageAttributes are the producer's attributes (traceparent, ...).
	MessageAttributes map[string]types.MessageAttributeValue
	ReceivedAt        time.Time

	mu           sync.Mutex
	lastExtended time.Time
	capped       bool // reached the 12 h ceiling: no more extensions
	finished     bool // deleted, released or left: no more extensions
	released     bool // finished by a release to releaseVis
	releaseVis   int32
	deferrals    int // times fairness re-sent it (AttrDeferrals)
	lost         atomic.Bool
}

// Lost reports whether a heartbeat found the receipt no longer valid (or
// the 12 h visibility ceiling passed): the message became visible and may
// be running elsewhere. The consumer then leaves it to SQS instead of
// deleting or releasing it, and a FIFO group does not continue past it.
func (m *Message) Lost() bool { return m.lost.Load() }

// SentAt is when SQS accepted the message (its SentTimestamp attribute, epoch
// milliseconds); zero when absent.
func (m *Message) SentAt() time.Time {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Action is what the consumer does with a processed message.
type Action int

const (
	// Delete: done (completed, or answered as a duplicate).
	Delete Action = iota
	// Release: make it visible again after Delay (retryable failure, busy).
	Release
	// DeadLetter: send to the DLQ with Reason, then delete from the source.
	DeadLetter
	// Leave: touch nothing (ownership lost; the other holder decides).
	Leave
)

func (a Action) String() string {
	return [...]string{"delete", "release", "dead-letter", "leave"}[a]
}

// Outcome is a ProcessFunc's verdict.
type Outcome struct {
	Action Action
	Delay  time.Duration // Release
	Reason *retry.Error  // DeadLetter (and, informationally, Release)
}

// ProcessFunc runs one message. ctx is cancelled when the drain budget at
// shutdown runs out; UntilShutdown(ctx) ends at the shutdown itself.
type ProcessFunc func(ctx context.Context, m *Message) Outcome

// shutdownKey carries, in a step's context, the consumer's own context (it ends at SIGTERM).
type shutdownKey struct{}

// UntilShutdown returns ctx, cancelled also once the consumer running the step is told to
// stop (SIGTERM), before the drain budget cancels the step itself; outside a consumer, ctx
// as it is. A step waiting between attempts waits under it, so that it hands its message back
// at SIGTERM instead of waiting out the drain budget; a running call still gets the budget.
func UntilShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	consumer, ok := ctx.Value(shutdownKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(consumer, cancel)
	return ctx, func() { stop(); cancel() }
}

// DLQ message attribute names carrying the diagnosis.
const (
	AttrErrorCode     = "ERROR_CODE"
	AttrErrorMessage  = "ERROR_MESSAGE"
	AttrRetryAttempts = "RETRY_ATTEMPTS"
	// DeadLetterGroup is the MessageGroupId of a FIFO dead letter whose message had none.
	DeadLetterGroup = "dead-letter"
	maxAttributes   = awslimits.SQSMaxMessageAttributes
	maxErrorMessage = 4096
	// visibilityMargin keeps every extension clear of the 12 h ceiling,
	// which AWS counts from its own receive (earlier than ReceivedAt).
	visibilityMargin = time.Minute
	// callTimeout bounds every SQS call but the long poll.
	callTimeout = 10 * time.Second
	// maxBatchAttempts bounds retries of transiently failed batch entries.
	maxBatchAttempts = 3
)

// Options configure a Consumer.
type Options struct {
	QueueURL          string
	DLQURL            string
	FIFO              bool
	MaxMessages       int           // per receive, 1..10
	WaitTime          time.Duration // long poll, ≤ 20 s
	VisibilityTimeout time.Duration // set on every receive and heartbeat
	Heartbeat         time.Duration // 0 = off
	Concurrency       int           // in-flight steps
	DrainTimeout      time.Duration // shutdown budget, counted from ctx's end (SIGTERM)
	Linger            time.Duration // how long a delete/visibility batch waits to fill (default 20 ms)
	// GroupOf names a FIFO message's group when SQS did not report
	// MessageGroupId (kumo omits it); nil = everything in one group.
	GroupOf func(*Message) string
	// KeyOf names a standard queue message's fairness key ("" = none, never capped), and
	// MaxPerKey caps the steps of one key running at once (0 = no cap): a message over the
	// cap is deferred, never started and never released (fair.go).
	KeyOf     func(*Message) string
	MaxPerKey int
	// DeferDelay is about one step of a key: a deferred copy returns DeferDelay/MaxPerKey
	// after the key's previous one (default 1 s).
	DeferDelay time.Duration
	// OnHeartbeat runs after each visibility extension with the messages
	// extended (idempotency lease and SFN heartbeats ride on it).
	OnHeartbeat func(ctx context.Context, msgs []*Message)
	Logger      *slog.Logger
}

// Stats are monotonically increasing counters.
type Stats struct {
	Received, Started, Deleted, Released, DeadLettered atomic.Int64
	Extended, ExtendFailed, Unstarted, DeleteFailed    atomic.Int64
	DLQFailed, ReceiveErrors                           atomic.Int64
	// Lost counts messages whose heartbeat was rejected; Capped those that
	// reached the 12 h visibility ceiling.
	Lost, Capped atomic.Int64
	// Deferred counts messages re-sent over their key's cap; OverCap those run over it
	// because the re-send was impossible (it failed, or no room for the carried counts).
	Deferred, OverCap atomic.Int64
}

// Consumer polls one queue.
type Consumer struct {
	api     API
	o       Options
	process ProcessFunc
	log     *slog.Logger
	Stats   Stats

	slots    chan struct{}
	stopping atomic.Bool

	mu       sync.Mutex
	inflight map[*Message]struct{}
	perKey   map[string]int // fairness: steps running per key
	// nextDefer is, per key, when its last deferred copy comes back (fair.go).
	nextDefer map[string]time.Time
	// seenDeferred is Stats.Deferred at the last receive (passingDeferred).
	seenDeferred atomic.Int64

	deleter *batcher
	vis     *batcher
	wg      sync.WaitGroup // message goroutines
}

// New builds a Consumer; call Run.
func New(api API, o Options, process ProcessFunc) (*Consumer, error) {
	if o.QueueURL == "" {
		return nil, errors.New("queue: no queue URL")
	}
	if o.MaxMessages < 1 || o.MaxMessages > awslimits.SQSMaxBatch {
		o.MaxMessages = awslimits.SQSMaxBatch
	}
	if o.Concurrency < 1 {
		o.Concurrency = 1
	}
	if o.DeferDelay <= 0 {
		o.DeferDelay = time.Second
	}
	if o.Linger <= 0 {
		o.Linger = 20 * time.Millisecond
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 25 * time.Second
	}
	if o.Heartbeat > 0 && o.Heartbeat >= o.VisibilityTimeout {
		return nil, fmt.Errorf("queue: heartbeat %v must be below the visibility timeout %v", o.Heartbeat, o.VisibilityTimeout)
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Consumer{api: api, o: o, process: process, log: log, inflight: map[*Message]struct{}{}, perKey: map[string]int{}, nextDefer: map[string]time.Time{}}
	c.slots = make(chan struct{}, o.Concurrency)
	for i := 0; i < o.Concurrency; i++ {
		c.slots <- struct{}{}
	}
	c.deleter = newBatcher(o.Linger, c.flushDeletes)
	c.vis = newBatcher(o.Linger, c.flushVisibility)
	return c, nil
}

// Run consumes until ctx is cancelled (SIGTERM), then stops receiving, makes
// received but unstarted messages visible at once, lets in-flight steps
// finish, and flushes pending deletes. DrainTimeout counts from the moment ctx
// ends: a receive still on the wire may finish within it (what it returns is
// released), and when it runs out the receive is abandoned and in-flight
// steps are cancelled.
func (c *Consumer) Run(ctx context.Context) error {
	// Steps and the last receive outlive ctx until the drain budget, which
	// starts at ctx's end, runs out.
	drainCtx, stopDrain := c.drainBudget(ctx)
	defer stopDrain()
	stepCtx, cancelSteps := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), shutdownKey{}, ctx))
	defer cancelSteps()
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); c.heartbeatLoop(hbCtx) }()

	c.receiveLoop(ctx, drainCtx, stepCtx)
	c.stopping.Store(true)
	c.drain(drainCtx, cancelSteps)
	stopHB()
	<-hbDone
	c.deleter.close()
	c.vis.close()
	return nil
}

// drainBudget returns a context that outlives ctx by DrainTimeout, counted from
// ctx's end, and the function that releases it.
func (c *Consumer) drainBudget(ctx context.Context) (context.Context, func()) {
	drainCtx, drainSpent := context.WithCancel(context.WithoutCancel(ctx))
	var drainTimer *time.Timer
	var timerMu sync.Mutex
	stopWatch := context.AfterFunc(ctx, func() {
		timerMu.Lock()
		drainTimer = time.AfterFunc(c.o.DrainTimeout, drainSpent)
		timerMu.Unlock()
	})
	return drainCtx, func() {
		stopWatch()
		timerMu.Lock()
		if drainTimer != nil {
			drainTimer.Stop()
		}
		timerMu.Unlock()
		drainSpent()
	}
}

// receiveLoop receives and starts messages as slots free up until ctx ends;
// what a receive returns after that is released at once.
func (c *Consumer) receiveLoop(ctx, drainCtx, stepCtx context.Context) {
	backoff := retry.Policy{Base: 200 * time.Millisecond, Cap: 10 * time.Second}
	fails := 0
	for ctx.Err() == nil {
		n := c.acquire(ctx)
		if n == 0 {
			return
		}
		if ctx.Err() != nil {
			// Cancelled while gathering slots: no new long poll at shutdown.
			c.giveBack(n)
			return
		}
		// The receive is not cancelled by ctx: a receive cut off mid-read
		// can leave its messages invisible for a whole visibility timeout.
		// It ends within WaitTime, and what it returns after SIGTERM is made
		// visible again at once; only a drain budget shorter than what is
		// left of the long poll cuts it off.
		msgs, err := c.receive(drainCtx, n)
		if err == nil && ctx.Err() != nil {
			c.giveBack(n - len(msgs))
			c.mu.Lock()
			for _, m := range msgs {
				c.inflight[m] = struct{}{}
			}
			c.mu.Unlock()
			if len(msgs) > 0 {
				c.releaseUnstarted(msgs)
			}
			return
		}
		if err != nil {
			c.giveBack(n)
			if ctx.Err() != nil {
				return
			}
			c.Stats.ReceiveErrors.Add(1)
			fails++
			d := backoff.Backoff(fails)
			c.log.Warn("receive failed", "err", err, "retry_in", d)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			continue
		}
		fails = 0
		c.giveBack(n - len(msgs))
		c.dispatch(stepCtx, msgs)
	}
}

// drain waits for the in-flight steps; once the drain budget is spent it
// cancels them and waits at most 5 s more.
func (c *Consumer) drain(drainCtx context.Context, cancelSteps func()) {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-drainCtx.Done():
		c.log.Warn("drain budget spent; cancelling in-flight steps", "budget", c.o.DrainTimeout.String())
		cancelSteps()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.log.Error("steps did not stop after cancellation; exiting anyway")
		}
	}
}

// acquire blocks for one free slot, then takes as many more as are free, up
// to MaxMessages, so a receive never asks for messages it cannot start.
func (c *Consumer) acquire(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case <-c.slots:
	}
	n := 1
	want := min(c.o.MaxMessages, c.o.Concurrency)
	hurry := c.passingDeferred()
	// Slots freed one by one at saturation would make receives of one or
	// two messages; wait up to Linger for a fuller batch (0.1 receive per
	// step instead of up to 1). Negligible next to any real step.
	var timer <-chan time.Time
	for n < want {
		select {
		case <-c.slots:
			n++
			continue
		default:
		}
		if hurry {
			return n // the free slots only, no linger (passingDeferred)
		}
		if timer == nil {
			t := time.NewTimer(c.o.Linger)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-c.slots:
			n++
		case <-timer:
			return n
		case <-ctx.Done():
			return n
		}
	}
	return n
}

func (c *Consumer) giveBack(n int) {
	for i := 0; i < n; i++ {
		c.slots <- struct{}{}
	}
}

func (c *Consumer) receive(ctx context.Context, n int) ([]*Message, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.WaitTime+callTimeout)
	defer cancel()
	out, err := c.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(c.o.QueueURL),
		MaxNumberOfMessages:         int32(n),
		WaitTimeSeconds:             int32(c.o.WaitTime / time.Second),
		VisibilityTimeout:           int32(c.o.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	msgs := make([]*Message, 0, len(out.Messages))
	for _, sm := range out.Messages {
		m := FromSQS(sm, now)
		if c.o.FIFO && m.GroupID == "" && c.o.GroupOf != nil {
			m.GroupID = c.o.GroupOf(m)
		}
		msgs = append(msgs, m)
	}
	c.Stats.Received.Add(int64(len(msgs)))
	return msgs, nil
}

// FromSQS converts an SDK message.
func FromSQS(sm types.Message, receivedAt time.Time) *Message {
	m := &Message{
		ID:                aws.ToString(sm.MessageId),
		Receipt:           aws.ToString(sm.ReceiptHandle),
		Body:              aws.ToString(sm.Body),
		Attributes:        sm.Attributes,
		MessageAttributes: sm.MessageAttributes,
		ReceivedAt:        receivedAt,
		lastExtended:      receivedAt,
	}
	m.ReceiveCount, _ = strconv.Atoi(sm.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if m.ReceiveCount < 1 {
		m.ReceiveCount = 1
	}
	m.GroupID = sm.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	m.carryCounts()
	return m
}

// dispatch starts every message; FIFO messages of one group run one after
// another in receive order, different groups in parallel.
func (c *Consumer) dispatch(ctx context.Context, msgs []*Message) {
	c.mu.Lock()
	for _, m := range msgs {
		c.inflight[m] = struct{}{}
	}
	c.mu.Unlock()
	if !c.o.FIFO {
		// Key slots are taken here, in receive order, so the first of a key's messages in a
		// batch is the one that runs and the rest are the ones deferred.
		for _, m := range msgs {
			key, admitted := c.admit(m)
			c.wg.Add(1)
			go func() { defer c.wg.Done(); c.runFair(ctx, m, key, admitted) }()
		}
		return
	}
	var order []string
	groups := map[string][]*Message{}
	for _, m := range msgs {
		if _, ok := groups[m.GroupID]; !ok {
			order = append(order, m.GroupID)
		}
		groups[m.GroupID] = append(groups[m.GroupID], m)
	}
	for _, g := range order {
		ms := groups[g]
		sortGroup(ms)
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.runGroup(ctx, ms) }()
	}
}

// runGroup processes msgs in order. After a release, the rest of the group
// is released with the same delay so order holds; at shutdown the rest is
// made visible at once (on AWS the group stays locked behind its in-flight
// head either way).
//
// A message whose heartbeat was rejected is lost to this worker (it may be
// running elsewhere): the group does not continue past it, and the rest is
// made visible at once behind it.
func (c *Consumer) runGroup(ctx context.Context, msgs []*Message) {
	for i, m := range msgs {
		if c.stopping.Load() {
			c.releaseUnstarted(msgs[i:])
			return
		}
		var taken Outcome
		if m.Lost() {
			taken = c.apply(ctx, m, Outcome{Action: Leave})
		} else {
			taken = c.apply(ctx, m, c.safeProcess(ctx, m))
		}
		rest := msgs[i+1:]
		if len(rest) == 0 {
			return
		}
		switch {
		case taken.Action == Release:
			for _, r := range rest {
				c.apply(ctx, r, Outcome{Action: Release, Delay: taken.Delay})
			}
			return
		case m.Lost():
			c.log.Warn("message lost mid-group; releasing the rest of its group", "message_id", m.ID, "group", m.GroupID, "released", len(rest))
			for _, r := range rest {
				c.apply(ctx, r, Outcome{Action: Release})
			}
			return
		}
	}
}

// sortGroup orders one group's messages by SequenceNumber (AWS returns them
// in that order already), falling back to SentTimestamp: kumo omits
// SequenceNumber and re-queues expired or released messages in map order.
func sortGroup(ms []*Message) {
	seq := func(m *Message) (string, int64) {
		return m.Attributes[string(types.MessageSystemAttributeNameSequenceNumber)], m.SentAt().UnixMilli()
	}
	sort.SliceStable(ms, func(i, j int) bool {
		si, ti := seq(ms[i])
		sj, tj := seq(ms[j])
		if si != "" && sj != "" {
			// Sequence numbers are up to 20 digits: compare by length first.
			if len(si) != len(sj) {
				return len(si) < len(sj)
			}
			return si < sj
		}
		return ti < tj
	})
}

func (c *Consumer) releaseUnstarted(msgs []*Message) {
	for _, m := range msgs {
		c.Stats.Unstarted.Add(1)
		c.finishRelease(m, 0)
		c.vis.add(context.Background(), entry{m: m, visibility: 0})
	}
	c.log.Info("released unstarted messages at shutdown", "count", len(msgs))
}

func (c *Consumer) safeProcess(ctx context.Context, m *Message) (out Outcome) {
	c.Stats.Started.Add(1)
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("step panicked", "message_id", m.ID, "panic", r, "stack", string(debug.Stack()))
			out = Outcome{Action: Release, Delay: time.Second, Reason: &retry.Error{Code: wire.Panic, Message: fmt.Sprint(r), Retryable: true}}
		}
	}()
	return c.process(ctx, m)
}

// finish takes m out of the heartbeat set and frees its slot.
func (c *Consumer) finish(m *Message) {
	m.mu.Lock()
	m.finished = true
	m.mu.Unlock()
	c.mu.Lock()
	_, ok := c.inflight[m]
	delete(c.inflight, m)
	c.mu.Unlock()
	if ok {
		c.slots <- struct{}{}
	}
}

// finishRelease is finish for a release to visibility vis, recorded so a
// heartbeat that crossed it can re-apply it (see Extend).
func (c *Consumer) finishRelease(m *Message, vis int32) {
	m.mu.Lock()
	m.released, m.releaseVis = true, vis
	m.mu.Unlock()
	c.finish(m)
}

// apply carries out out and returns the outcome actually taken: a Delete or
// Release of a lost message becomes Leave (SQS redelivers it and the
// idempotency record answers the duplicate; a stale receipt must not
// delete or hide the live copy), and a failed dead-letter becomes Release.
func (c *Consumer) apply(ctx context.Context, m *Message, out Outcome) Outcome {
	if m.Lost() && (out.Action == Delete || out.Action == Release) {
		c.log.Warn("message lost to this worker; leaving it to SQS", "message_id", m.ID, "wanted", out.Action.String())
		out = Outcome{Action: Leave, Reason: out.Reason}
	}
	switch out.Action {
	case Delete:
		c.finish(m)
		c.deleter.add(ctx, entry{m: m})
	case Release:
		vis := clampVisibility(capDelay(m, out.Delay, time.Now()))
		c.finishRelease(m, vis)
		c.Stats.Released.Add(1)
		c.vis.add(ctx, entry{m: m, visibility: vis})
	case DeadLetter:
		// The source copy is deleted only after the DLQ accepted it.
		err := c.SendToDLQ(context.WithoutCancel(ctx), m, out.Reason)
		if err != nil {
			c.Stats.DLQFailed.Add(1)
			d := 5*time.Second + time.Duration(rand.Int64N(int64(5*time.Second)))
			c.log.Error("dead-letter failed; releasing for a later attempt", "message_id", m.ID, "err", err, "retry_in", d)
			return c.apply(ctx, m, Outcome{Action: Release, Delay: d, Reason: out.Reason})
		}
		c.finish(m)
		c.Stats.DeadLettered.Add(1)
		c.deleter.add(ctx, entry{m: m})
	case Leave:
		c.finish(m)
	}
	return out
}

// capDelay limits d so the visibility stays within 12 h (less a margin) of
// m's receive; AWS rejects anything beyond.
func capDelay(m *Message, d time.Duration, now time.Time) time.Duration {
	if m.ReceivedAt.IsZero() {
		return d
	}
	room := wire.SQSMaxVisibility - now.Sub(m.ReceivedAt) - visibilityMargin
	if room < 0 {
		room = 0
	}
	return min(d, room)
}

func clampVisibility(d time.Duration) int32 {
	if d < 0 {
		d = 0
	}
	if d > wire.SQSMaxVisibility {
		d = wire.SQSMaxVisibility
	}
	// Round up: a 300 ms backoff must not become an immediate redelivery
	// storm, and SQS counts whole seconds.
	return int32((d + time.Second - 1) / time.Second)
}

// SendToDLQ sends m's body to the DLQ with its diagnosis and the original
// attributes (within SQS's 10-attribute limit, diagnosis first).
func (c *Consumer) SendToDLQ(ctx context.Context, m *Message, reason *retry.Error) error {
	return SendToDLQ(ctx, c.api, c.o.DLQURL, c.o.FIFO, m, reason, c.log)
}

// SendToDLQ is the DLQ send shared with the Lambda mode.
func SendToDLQ(ctx context.Context, api API, dlqURL string, fifo bool, m *Message, reason *retry.Error, log *slog.Logger) error {
	if dlqURL == "" {
		return errors.New("no DLQ URL configured")
	}
	if reason == nil {
		reason = &retry.Error{Code: wire.Unknown, Message: "dead-lettered without a reason"}
	}
	code := SanitizeAttribute(string(reason.Code), 256)
	if code == "" {
		code = string(wire.Unknown)
	}
	msg := SanitizeAttribute(reason.Message, maxErrorMessage)
	if msg == "" {
		msg = code
	}
	attrs := map[string]types.MessageAttributeValue{
		AttrErrorCode:     {DataType: aws.String("String"), StringValue: aws.String(code)},
		AttrErrorMessage:  {DataType: aws.String("String"), StringValue: aws.String(msg)},
		AttrRetryAttempts: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(m.ReceiveCount))},
	}
	names := make([]string, 0, len(m.MessageAttributes))
	for k := range m.MessageAttributes {
		if _, clash := attrs[k]; !clash && !DeferralAttribute(k) {
			names = append(names, k)
		}
	}
	// traceparent first: the trace is what a human follows from the DLQ.
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "traceparent") != (names[j] == "traceparent") {
			return names[i] == "traceparent"
		}
		return names[i] < names[j]
	})
	var dropped []string
	for _, k := range names {
		if len(attrs) >= maxAttributes {
			dropped = append(dropped, k)
			continue
		}
		attrs[k] = m.MessageAttributes[k]
	}
	if len(dropped) > 0 && log != nil {
		log.Warn("DLQ attribute limit: original attributes dropped", "message_id", m.ID, "dropped", dropped)
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(m.Body), MessageAttributes: attrs}
	if fifo {
		g := m.GroupID
		if g == "" {
			g = DeadLetterGroup
		}
		in.MessageGroupId = aws.String(g)
		// A re-send after a crash dedups within SQS's 5-minute window.
		in.MessageDeduplicationId = aws.String(m.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := api.SendMessage(ctx, in)
	return err
}

// SanitizeAttribute makes s a valid SQS attribute value: characters outside
// #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF (and
// invalid UTF-8) become U+FFFD, and the result is cut to at most maxBytes
// on a rune boundary. SQS rejects the whole send otherwise.
func SanitizeAttribute(s string, maxBytes int) string {
	var b strings.Builder
	for _, r := range s {
		if !sqsAllowed(r) {
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > maxBytes {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func sqsAllowed(r rune) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// heartbeatLoop extends the visibility of every in-flight message before it
// runs out, ten per ChangeMessageVisibilityBatch call. OnHeartbeat runs
// asynchronously, one at a time, so a slow lease or task heartbeat never
// delays the next visibility extension.
func (c *Consumer) heartbeatLoop(ctx context.Context) {
	if c.o.Heartbeat <= 0 {
		<-ctx.Done()
		return
	}
	tick := c.o.Heartbeat / 4
	if tick < 100*time.Millisecond {
		tick = 100 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	var cb sync.WaitGroup
	defer func() {
		// Let a running callback finish (its ctx is cancelled now), but
		// never let a stuck one hold up shutdown.
		done := make(chan struct{})
		go func() { cb.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(callTimeout):
			c.log.Warn("heartbeat callback still running at shutdown; not waiting for it")
		}
	}()
	var cbBusy atomic.Bool
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		var due []*Message
		c.mu.Lock()
		for m := range c.inflight {
			m.mu.Lock()
			switch {
			case m.capped:
				// Its last extension ran to the ceiling: once past it, the
				// receipt no longer owns the message.
				if now.Sub(m.ReceivedAt) >= wire.SQSMaxVisibility-visibilityMargin && !m.lost.Swap(true) {
					c.Stats.Lost.Add(1)
				}
			case !m.finished && now.Sub(m.lastExtended) >= c.o.Heartbeat-tick:
				due = append(due, m)
			}
			m.mu.Unlock()
		}
		c.mu.Unlock()
		if len(due) == 0 {
			continue
		}
		sort.Slice(due, func(i, j int) bool { return due[i].ReceivedAt.Before(due[j].ReceivedAt) })
		ok := c.Extend(ctx, due, c.o.VisibilityTimeout, now)
		if c.o.OnHeartbeat == nil || len(ok) == 0 {
			continue
		}
		if !cbBusy.CompareAndSwap(false, true) {
			c.log.Warn("previous heartbeat callback still running; skipping this one", "messages", len(ok))
			continue
		}
		cb.Add(1)
		go func() {
			defer cb.Done()
			defer cbBusy.Store(false)
			cctx, cancel := context.WithTimeout(ctx, c.o.Heartbeat)
			defer cancel()
			c.o.OnHeartbeat(cctx, ok)
		}()
	}
}

// Extend sets the visibility of msgs to vis from now (capped at 12 h from
// each receive), in concurrent batches of ten, and returns the messages it
// extended. Rejected ones are marked lost; ones at the 12 h ceiling stop
// being extended. A message finished before the call is skipped; one
// finished during it gets its release re-applied, since the extension may
// have overwritten it.
func (c *Consumer) Extend(ctx context.Context, msgs []*Message, vis time.Duration, now time.Time) []*Message {
	todo := c.extensions(msgs, vis, now)
	var (
		mu sync.Mutex
		ok []*Message
		wg sync.WaitGroup
	)
	for start := 0; start < len(todo); start += awslimits.SQSMaxBatch {
		batch := todo[start:min(start+awslimits.SQSMaxBatch, len(todo))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := c.extendBatch(ctx, batch, now)
			mu.Lock()
			ok = append(ok, done...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(ok, func(i, j int) bool { return ok[i].ReceivedAt.Before(ok[j].ReceivedAt) })
	return ok
}

// extension is one message's new visibility timeout, in seconds.
type extension struct {
	m   *Message
	vis int32
}

// extensions is what Extend asks for: vis for each message not finished, or
// what is left to the 12 h ceiling once vis would cross it (then the message
// is capped: that is its last extension).
func (c *Consumer) extensions(msgs []*Message, vis time.Duration, now time.Time) []extension {
	var todo []extension
	for _, m := range msgs {
		d := capDelay(m, vis, now)
		m.mu.Lock()
		skip := m.finished || m.capped
		if !skip && d < vis {
			// One last extension up to the ceiling, then none.
			m.capped = true
		}
		m.mu.Unlock()
		if skip {
			continue
		}
		if d < vis {
			c.Stats.Capped.Add(1)
			c.log.Warn("visibility reached the 12 h ceiling; the message will be redelivered", "message_id", m.ID, "received_at", m.ReceivedAt, "last_extension", d)
			if d < time.Second {
				continue
			}
		}
		todo = append(todo, extension{m: m, vis: int32(d / time.Second)})
	}
	return todo
}

// extendBatch makes one ChangeMessageVisibilityBatch call (with batchRetry's
// retries) for the messages of batch still unfinished, and returns the ones
// extended.
func (c *Consumer) extendBatch(ctx context.Context, batch []extension, now time.Time) []*Message {
	var live []extension
	for _, e := range batch {
		// Checked right before the call: never extend after a release.
		e.m.mu.Lock()
		if !e.m.finished {
			live = append(live, e)
		}
		e.m.mu.Unlock()
	}
	if len(live) == 0 {
		return nil
	}
	failed, err := c.batchRetry(ctx, len(live), func(cctx context.Context, idx []int) ([]types.BatchResultErrorEntry, error) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(idx))
		for k, i := range idx {
			entries[k] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(live[i].m.Receipt), VisibilityTimeout: live[i].vis}
		}
		out, err := c.api.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(c.o.QueueURL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	})
	if err != nil {
		// Whole call failed (network): try again next tick; the
		// margin between heartbeat and visibility covers a few misses.
		c.log.Warn("visibility heartbeat failed", "err", err, "messages", len(live))
	}
	var ok []*Message
	for i, e := range live {
		m := e.m
		m.mu.Lock()
		crossed, released, release := m.finished, m.released, m.releaseVis
		m.mu.Unlock()
		if f, bad := failed[i]; bad {
			if crossed || !f.SenderFault {
				continue // finished meanwhile, or transient: next tick
			}
			c.Stats.ExtendFailed.Add(1)
			c.Stats.Lost.Add(1)
			m.lost.Store(true)
			c.log.Warn("visibility heartbeat rejected; message lost to this worker", "message_id", m.ID, "code", aws.ToString(f.Code))
			continue
		}
		if crossed {
			if released {
				c.vis.add(ctx, entry{m: m, visibility: release})
			}
			continue
		}
		m.mu.Lock()
		m.lastExtended = now
		m.mu.Unlock()
		c.Stats.Extended.Add(1)
		ok = append(ok, m)
	}
	return ok
}

// batchRetry runs call over entry indexes 0..n-1, each call bounded by
// callTimeout, retrying entries that failed transiently (SenderFault
// false: InternalError, throttling) up to maxBatchAttempts with a short
// jittered backoff: SQS reports per-entry failures with HTTP 200. It
// returns the entries still failed by index; a whole-call failure fails
// every pending entry (Code "RequestFailed", transient) and is returned.
func (c *Consumer) batchRetry(ctx context.Context, n int, call func(context.Context, []int) ([]types.BatchResultErrorEntry, error)) (map[int]types.BatchResultErrorEntry, error) {
	failed := map[int]types.BatchResultErrorEntry{}
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		fs, err := call(cctx, pending)
		cancel()
		if err != nil {
			for _, i := range pending {
				failed[i] = types.BatchResultErrorEntry{Id: aws.String(strconv.Itoa(i)), Code: aws.String("RequestFailed"), Message: aws.String(err.Error())}
			}
			return failed, err
		}
		var retry []int
		for _, f := range fs {
			i, perr := strconv.Atoi(aws.ToString(f.Id))
			if perr != nil || i < 0 || i >= n {
				continue
			}
			failed[i] = f
			if !f.SenderFault {
				retry = append(retry, i)
			}
		}
		if len(retry) == 0 || attempt >= maxBatchAttempts {
			return failed, nil
		}
		for _, i := range retry {
			delete(failed, i)
		}
		sort.Ints(retry)
		pending = retry
		d := time.Duration(attempt)*50*time.Millisecond + time.Duration(rand.Int64N(int64(50*time.Millisecond)))
		select {
		case <-ctx.Done():
			return failed, ctx.Err()
		case <-time.After(d):
		}
	}
	return failed, nil
}

func (c *Consumer) flushDeletes(ctx context.Context, es []entry) {
	failed, err := c.batchRetry(ctx, len(es), func(cctx context.Context, idx []int) ([]types.BatchResultErrorEntry, error) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(idx))
		for k, i := range idx {
			entries[k] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(es[i].m.Receipt)}
		}
		out, err := c.api.DeleteMessageBatch(cctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.o.QueueURL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	})
	if err != nil {
		// The messages reappear after their visibility timeout and are
		// answered from the idempotency record; nothing is lost.
		c.log.Error("delete batch failed", "err", err, "messages", len(failed))
	}
	for i, f := range failed {
		if err == nil {
			c.log.Warn("delete rejected", "message_id", es[i].m.ID, "code", aws.ToString(f.Code), "detail", aws.ToString(f.Message), "receipt_invalid", isReceiptInvalid(f))
		}
	}
	c.Stats.DeleteFailed.Add(int64(len(failed)))
	c.Stats.Deleted.Add(int64(len(es) - len(failed)))
}

func (c *Consumer) flushVisibility(ctx context.Context, es []entry) {
	failed, err := c.batchRetry(ctx, len(es), func(cctx context.Context, idx []int) ([]types.BatchResultErrorEntry, error) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(idx))
		for k, i := range idx {
			entries[k] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(es[i].m.Receipt), VisibilityTimeout: es[i].visibility}
		}
		out, err := c.api.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(c.o.QueueURL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	})
	if err != nil {
		c.log.Warn("release batch failed; messages reappear at their visibility timeout", "err", err, "messages", len(failed))
		return
	}
	for i, f := range failed {
		c.log.Warn("release rejected", "message_id", es[i].m.ID, "code", aws.ToString(f.Code), "receipt_invalid", isReceiptInvalid(f))
	}
}

// isReceiptInvalid reports a rejection meaning the receipt no longer owns
// the message (it became visible again or was deleted).
func isReceiptInvalid(f types.BatchResultErrorEntry) bool {
	switch aws.ToString(f.Code) {
	case "ReceiptHandleIsInvalid", "InvalidParameterValue", "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight":
		return true
	}
	return false
}
