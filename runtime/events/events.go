// Package events publishes completion events to EventBridge through a
// PutEvents batcher.
//
// Many steps finish concurrently in one worker; each calls Publish, which
// blocks until its entry is accepted (so the worker deletes the SQS
// message only after the event is durable). The batcher packs entries
// from all callers into as few PutEvents requests as the limits allow:
//
//   - at most MaxEntries per request (10 on a classic bus, 100 on v2);
//   - request entries total at most 1,048,576 bytes, sized as AWS does
//     (see Size); an entry too large on its own is rejected with
//     ErrEntryTooLarge: send a claim-check reference instead;
//   - a batch is sent when full (count or size), when Linger has passed
//     since its first entry, or on Close.
//
// Failures: a failed request (throttling, 5xx, network) is retried whole;
// a partial failure (FailedEntryCount > 0) retries only the entries whose
// ErrorCode is transient. Both use full-jitter backoff and at most
// MaxAttempts attempts per entry, after which Publish returns an error and
// the queue (the one retry layer for steps) redelivers the step.
//
// Tracing: Entry.TraceID is written into Detail as "trace_id" when the
// detail lacks one, and Entry.TraceHeader (an X-Ray header, see
// telemetry.XRayTraceHeader) rides the entry's TraceHeader.
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/fleetc/fleetc/runtime/events/putevents"
)

// Entry is one event to publish.
type Entry struct {
	Source     string
	DetailType string
	// Detail is a JSON object.
	Detail json.RawMessage
	// Resources are ARNs the event concerns (optional).
	Resources []string
	// Time is the event time; zero leaves it to EventBridge (and saves
	// 14 bytes of request budget).
	Time time.Time
	// TraceID, when set, is added to Detail as "trace_id" unless Detail
	// already has that field.
	TraceID string
	// TraceHeader is an AWS X-Ray trace header (optional).
	TraceHeader string
}

// API is the subset of *eventbridge.Client the batcher uses.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Bus models, as in the runtime config's events.bus_model.
const (
	BusClassic = "classic"
	BusV2      = "v2"
)

// Config tunes a Batcher. Zero values take the defaults shown.
type Config struct {
	// Bus is the event bus name or ARN ("" = default bus).
	Bus string
	// BusModel is BusClassic (default) or BusV2.
	BusModel string
	// MaxEntries per request: default and cap 10 (classic) or 100 (v2).
	MaxEntries int
	// MaxRequestBytes: default and cap MaxRequestBytes.
	MaxRequestBytes int
	// Linger is how long a non-full batch waits for company: 100ms.
	Linger time.Duration
	// MaxAttempts per entry, first try included: 4.
	MaxAttempts int
	// BaseBackoff and MaxBackoff bound full-jitter backoff: 50ms, 2s.
	BaseBackoff, MaxBackoff time.Duration
	// MaxConcurrentRequests in flight (including their retries): 4.
	// When all are busy, Publish waits: backpressure, not buffering.
	MaxConcurrentRequests int
}

// Errors.
var (
	// ErrEntryTooLarge: one entry exceeds the request limit by itself.
	ErrEntryTooLarge = errors.New("events: entry exceeds the PutEvents request size limit")
	// ErrClosed: Publish after Close.
	ErrClosed = errors.New("events: batcher closed")
)

// EntryError is a per-entry PutEvents failure (ErrorCode/ErrorMessage of
// the result entry) that was permanent or outlived MaxAttempts.
type EntryError struct {
	Code, Message string
	Attempts      int
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("events: entry rejected after %d attempt(s): %s: %s", e.Attempts, e.Code, e.Message)
}

// permanentCodes are per-entry error codes that no retry can fix.
var permanentCodes = map[string]bool{
	"MalformedDetail":                     true,
	"InvalidArgument":                     true,
	"ValidationException":                 true,
	"AccessDeniedException":               true,
	"NotAuthorizedForSourceException":     true,
	"NotAuthorizedForDetailTypeException": true,
	"ResourceNotFoundException":           true,
}

// Stats counts batcher activity since New.
type Stats struct {
	Requests       int64 // PutEvents calls, retries included
	Published      int64 // entries accepted
	Failed         int64 // entries given up on
	RetriedEntries int64 // entry re-sends after a failure
}

type item struct {
	entry types.PutEventsRequestEntry
	size  int
	done  chan error // buffered 1
}

// Batcher batches PutEvents. Create with New; Close when done.
type Batcher struct {
	api  API
	cfg  Config
	in   chan *item
	sem  chan struct{}
	wg   sync.WaitGroup // senders
	done chan struct{}  // collector exited

	mu     sync.RWMutex
	closed bool

	ctx    context.Context // cancelled when Close gives up
	cancel context.CancelFunc

	requests, published, failed, retried atomic.Int64
}

// New validates cfg, applies defaults and starts the batcher.
func New(api API, cfg Config) (*Batcher, error) {
	limit := putevents.MaxEntriesClassic
	switch cfg.BusModel {
	case "", BusClassic:
		cfg.BusModel = BusClassic
	case BusV2:
		limit = putevents.MaxEntriesV2
	default:
		return nil, fmt.Errorf("events: bus model %q: want %q or %q", cfg.BusModel, BusClassic, BusV2)
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = limit
	}
	if cfg.MaxEntries < 1 || cfg.MaxEntries > limit {
		return nil, fmt.Errorf("events: max entries %d: a %s bus takes 1..%d per PutEvents", cfg.MaxEntries, cfg.BusModel, limit)
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = putevents.MaxRequestBytes
	}
	if cfg.MaxRequestBytes < 1 || cfg.MaxRequestBytes > putevents.MaxRequestBytes {
		return nil, fmt.Errorf("events: max request bytes %d: want 1..%d", cfg.MaxRequestBytes, putevents.MaxRequestBytes)
	}
	if cfg.Linger <= 0 {
		cfg.Linger = 100 * time.Millisecond
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 4
	}
	if cfg.BaseBackoff <= 0 {
		cfg.BaseBackoff = 50 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 2 * time.Second
	}
	if cfg.MaxConcurrentRequests <= 0 {
		cfg.MaxConcurrentRequests = 4
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher{
		api:    api,
		cfg:    cfg,
		in:     make(chan *item),
		sem:    make(chan struct{}, cfg.MaxConcurrentRequests),
		done:   make(chan struct{}),
		ctx:    ctx,
		cancel: cancel,
	}
	go b.collect()
	return b, nil
}

// Config returns the effective configuration (defaults applied).
func (b *Batcher) Config() Config { return b.cfg }

// Stats returns a snapshot of the counters.
func (b *Batcher) Stats() Stats {
	return Stats{
		Requests:       b.requests.Load(),
		Published:      b.published.Load(),
		Failed:         b.failed.Load(),
		RetriedEntries: b.retried.Load(),
	}
}

// Prepare validates e, adds its trace_id to Detail and returns the SDK
// entry with its AWS size. Exposed so callers can check sizes (and
// decide on claim-check) before publishing.
func (b *Batcher) Prepare(e Entry) (types.PutEventsRequestEntry, int, error) {
	if e.Source == "" || e.DetailType == "" {
		return types.PutEventsRequestEntry{}, 0, errors.New("events: entry needs Source and DetailType")
	}
	detail, err := withTraceID(e.Detail, e.TraceID)
	if err != nil {
		return types.PutEventsRequestEntry{}, 0, err
	}
	e.Detail = detail
	size := Size(e)
	if size > b.cfg.MaxRequestBytes {
		return types.PutEventsRequestEntry{}, size, fmt.Errorf("%w: entry is %d bytes, limit %d; put the payload in S3 (claimcheck) and send a result_ref/payload_ref instead", ErrEntryTooLarge, size, b.cfg.MaxRequestBytes)
	}
	out := types.PutEventsRequestEntry{
		Source:     aws.String(e.Source),
		DetailType: aws.String(e.DetailType),
		Detail:     aws.String(string(detail)),
	}
	if b.cfg.Bus != "" {
		out.EventBusName = aws.String(b.cfg.Bus)
	}
	if len(e.Resources) > 0 {
		out.Resources = append([]string(nil), e.Resources...)
	}
	if !e.Time.IsZero() {
		out.Time = aws.Time(e.Time)
	}
	if e.TraceHeader != "" {
		out.TraceHeader = aws.String(e.TraceHeader)
	}
	return out, size, nil
}

// withTraceID checks detail is a JSON object and adds "trace_id" when
// traceID is set and the object lacks it.
func withTraceID(detail json.RawMessage, traceID string) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(detail)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, errors.New("events: Detail must be a JSON object")
	}
	if traceID == "" {
		return trimmed, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, fmt.Errorf("events: Detail: %w", err)
	}
	if _, ok := fields["trace_id"]; ok {
		return trimmed, nil
	}
	id, _ := json.Marshal(traceID)
	fields["trace_id"] = id
	return json.Marshal(fields) // sorted keys: deterministic
}

// Publish queues e and waits until EventBridge accepted it, it failed for
// good, or ctx ended. After ctx ends the entry may still be sent.
func (b *Batcher) Publish(ctx context.Context, e Entry) error {
	select {
	case err := <-b.PublishAsync(ctx, e):
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PublishAll publishes entries concurrently (they may share a request)
// and returns the first error, after all have finished.
func (b *Batcher) PublishAll(ctx context.Context, entries []Entry) error {
	chans := make([]<-chan error, len(entries))
	for i, e := range entries {
		chans[i] = b.PublishAsync(ctx, e)
	}
	var first error
	for _, c := range chans {
		select {
		case err := <-c:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}

// PublishAsync queues e and returns a channel that yields its outcome
// exactly once. It blocks only while the batcher applies backpressure.
func (b *Batcher) PublishAsync(ctx context.Context, e Entry) <-chan error {
	res := make(chan error, 1)
	entry, size, err := b.Prepare(e)
	if err != nil {
		res <- err
		return res
	}
	it := &item{entry: entry, size: size, done: res}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		res <- ErrClosed
		return res
	}
	select {
	case b.in <- it:
	case <-ctx.Done():
		res <- ctx.Err()
	}
	return res
}

// collect packs items into batches and hands full or lingering batches
// to senders.
func (b *Batcher) collect() {
	defer close(b.done)
	var (
		batch  []*item
		size   int
		timer  *time.Timer
		timerC <-chan time.Time
	)
	flush := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if len(batch) == 0 {
			return
		}
		b.dispatch(batch)
		batch, size = nil, 0
	}
	for {
		select {
		case it, ok := <-b.in:
			if !ok {
				flush()
				return
			}
			if len(batch) > 0 && size+it.size > b.cfg.MaxRequestBytes {
				flush()
			}
			batch = append(batch, it)
			size += it.size
			if len(batch) >= b.cfg.MaxEntries {
				flush()
			} else if timer == nil {
				timer = time.NewTimer(b.cfg.Linger)
				timerC = timer.C
			}
		case <-timerC:
			timer, timerC = nil, nil
			flush()
		}
	}
}

// dispatch waits for a sender slot, then sends batch in the background.
func (b *Batcher) dispatch(batch []*item) {
	b.sem <- struct{}{}
	b.wg.Add(1)
	go func() {
		defer func() { <-b.sem; b.wg.Done() }()
		b.send(batch)
	}()
}

var (
	retryables = retry.IsErrorRetryables(retry.DefaultRetryables)
	throttles  = retry.IsErrorThrottles(retry.DefaultThrottles)
)

// send delivers batch, retrying the whole request on transient request
// errors and only the failed entries on partial failure.
func (b *Batcher) send(batch []*item) {
	pending := batch
	for attempt := 1; ; attempt++ {
		entries := make([]types.PutEventsRequestEntry, len(pending))
		for i, it := range pending {
			entries[i] = it.entry
		}
		b.requests.Add(1)
		out, err := b.api.PutEvents(b.ctx, &eventbridge.PutEventsInput{Entries: entries})
		var again []*item
		switch {
		case err != nil:
			transient := b.ctx.Err() == nil &&
				(retryables.IsErrorRetryable(err) == aws.TrueTernary || throttles.IsErrorThrottle(err) == aws.TrueTernary)
			if !transient || attempt >= b.cfg.MaxAttempts {
				b.finish(pending, fmt.Errorf("events: PutEvents (attempt %d): %w", attempt, err))
				return
			}
			again = pending
		case out == nil || len(out.Entries) != len(pending):
			// The response must align with the request; without that we
			// cannot tell which entries landed, so fail them all.
			b.finish(pending, fmt.Errorf("events: PutEvents returned %d result entries for %d", resultLen(out), len(pending)))
			return
		default:
			for i, it := range pending {
				r := out.Entries[i]
				code := aws.ToString(r.ErrorCode)
				switch {
				case code == "":
					b.published.Add(1)
					it.done <- nil
				case permanentCodes[code] || attempt >= b.cfg.MaxAttempts:
					b.failed.Add(1)
					it.done <- &EntryError{Code: code, Message: aws.ToString(r.ErrorMessage), Attempts: attempt}
				default:
					again = append(again, it)
				}
			}
		}
		if len(again) == 0 {
			return
		}
		b.retried.Add(int64(len(again)))
		if !sleep(b.ctx, fullJitter(b.cfg.BaseBackoff, b.cfg.MaxBackoff, attempt)) {
			b.finish(again, fmt.Errorf("events: gave up retrying: %w", b.ctx.Err()))
			return
		}
		pending = again
	}
}

func resultLen(out *eventbridge.PutEventsOutput) int {
	if out == nil {
		return 0
	}
	return len(out.Entries)
}

func (b *Batcher) finish(items []*item, err error) {
	b.failed.Add(int64(len(items)))
	for _, it := range items {
		it.done <- err
	}
}

// fullJitter returns a random duration in [0, min(ceiling, base*2^(attempt-1))).
func fullJitter(base, ceiling time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	if d > ceiling {
		d = ceiling
	}
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close stops accepting entries, flushes what is queued and waits for
// in-flight requests and their retries. If ctx ends first, in-flight
// requests are cancelled, their entries fail, and ctx's error returns.
// Close is idempotent.
func (b *Batcher) Close(ctx context.Context) error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.in)
	}
	b.mu.Unlock()
	drained := make(chan struct{})
	go func() {
		<-b.done
		b.wg.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		b.cancel()
		return nil
	case <-ctx.Done():
		b.cancel()
		<-drained
		return ctx.Err()
	}
}
