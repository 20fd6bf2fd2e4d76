package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Defaults of a message-by-message move.
const (
	// DefaultRate is the pace of a move when --rate is not given: slow enough that a fix
	// that did not take shows in the DLQ before many messages went back.
	DefaultRate = 10.0
	// DefaultHold is how long a received dead letter stays hidden while it is moved; if
	// fleetc dies, SQS shows it again after this.
	DefaultHold = 60 * time.Second
	// dedupPrefix starts the deduplication id of a redriven FIFO message. It is derived from
	// the dead letter's message id alone: sending the same dead letter again (a redrive
	// interrupted between send and delete, then rerun) is dropped by SQS within its 5-minute
	// deduplication window, and after it the worker's idempotency record answers it.
	dedupPrefix = "redrive-"
)

// MoveOptions select and pace a message-by-message move.
type MoveOptions struct {
	Code wire.Code     // only dead letters of this ERROR_CODE ("" = all)
	Max  int           // at most this many (0 = all)
	Rate float64       // messages per second (0 = DefaultRate)
	Hold time.Duration // visibility of a received dead letter (0 = DefaultHold)
	// AfterSend runs after a dead letter reached the class queue and before its DLQ copy is
	// deleted. An error stops the move right there, as if the process were killed: nothing
	// is deleted or made visible again. A test seam; nil in fleetc.
	AfterSend func(Letter) error
	// Progress is called after each moved message.
	Progress func(moved int)
	// Session is the invocation this move belongs to: a letter it already moved, back in
	// the DLQ, is not moved again (nil: a session of this move alone).
	Session *Session
}

// Moved is one dead letter back on the class queue.
type Moved struct {
	Letter Letter
	NewID  string // its message id on the class queue
	At     time.Time
}

// ErrInterrupted is what a move returns when AfterSend stopped it.
var ErrInterrupted = errors.New("move interrupted between send and delete")

// Move moves dead letters of t's DLQ back to its queue one at a time, never deleting a dead
// letter before the class queue accepted its copy, and each at most once per session (see
// AttrRedrive): it returns once a receive offers no letter it has not seen or moved. Letters
// it skipped (another code, back again) or could not move are made visible again. The error
// says why it stopped early; the letters moved until then are returned either way.
func Move(ctx context.Context, api API, t *Target, o MoveOptions) ([]Moved, error) {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Hold <= 0 {
		o.Hold = DefaultHold
	}
	s := o.Session
	if s == nil {
		s = NewSession()
	}
	m := &mover{api: api, t: t, o: o, s: s, seen: map[string]bool{}, gap: time.Duration(float64(time.Second) / o.Rate)}
	defer func() {
		if !m.interrupted {
			release(context.WithoutCancel(ctx), api, t.DLQURL, m.held)
		}
	}()
	for o.Max == 0 || len(m.moved) < o.Max {
		if err := ctx.Err(); err != nil {
			return m.moved, err
		}
		batch, err := m.receive(ctx)
		if err != nil {
			return m.moved, err
		}
		if len(batch) == 0 {
			return m.moved, nil
		}
		if err := m.moveBatch(ctx, batch); err != nil {
			return m.moved, err
		}
	}
	return m.moved, nil
}

// mover is one Move call's state across receives.
type mover struct {
	api API
	t   *Target
	o   MoveOptions
	s   *Session

	moved       []Moved
	held        []string // receipts to make visible again at the end
	seen        map[string]bool
	gap         time.Duration // between two sends, from o.Rate
	last        time.Time     // the last send
	interrupted bool          // AfterSend stopped the move: the held letters are left as they are
}

// receive takes the next batch from the DLQ and returns the letters this session has not
// seen or moved yet, a group's in the order they died; the others are held.
func (m *mover) receive(ctx context.Context) ([]Letter, error) {
	out, err := m.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.t.DLQURL),
		MaxNumberOfMessages: 10, VisibilityTimeout: int32(m.o.Hold / time.Second), WaitTimeSeconds: peekWait,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"}})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", m.t.DLQ, err)
	}
	batch := make([]Letter, 0, len(out.Messages))
	for _, msg := range out.Messages {
		l := letterFrom(msg)
		if m.seen[l.ID] {
			m.held = append(m.held, l.receipt)
			continue
		}
		m.seen[l.ID] = true
		if m.s.classify(l) != fresh {
			m.held = append(m.held, l.receipt)
			continue
		}
		batch = append(batch, l)
	}
	// A group's letters in the order they died (kumo returns no sequence numbers).
	sort.SliceStable(batch, func(i, j int) bool { return batch[i].SentAt.Before(batch[j].SentAt) })
	return batch, nil
}

// moveBatch moves the batch's letters that are addressed to the target and match the
// options, at the options' rate; the others are held. On an error the letters not moved
// are held too.
func (m *mover) moveBatch(ctx context.Context, batch []Letter) error {
	for i, l := range batch {
		if !m.t.addressedTo(l) || (m.o.Code != "" && l.Code != m.o.Code) || (m.o.Max > 0 && len(m.moved) >= m.o.Max) || ctx.Err() != nil || !m.wait(ctx) {
			m.held = append(m.held, l.receipt)
			continue
		}
		m.last = time.Now()
		id, err := send(ctx, m.api, m.t, l, m.s.stampAttr(l))
		if err != nil {
			m.hold(batch[i:])
			return fmt.Errorf("the class queue %s refused dead letter %s (%s): %w; it stays in the DLQ", m.t.Queue, l.ID, l.Code, err)
		}
		if m.o.AfterSend != nil {
			if err := m.o.AfterSend(l); err != nil {
				m.interrupted = true
				return fmt.Errorf("%w: %v", ErrInterrupted, err)
			}
		}
		// Deleted only now: a failure here leaves the letter in both places, and the
		// worker's idempotency record absorbs the duplicate.
		_, err = m.api.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(m.t.DLQURL), ReceiptHandle: aws.String(l.receipt)})
		m.moved = append(m.moved, Moved{Letter: l, NewID: id, At: m.last})
		m.s.record(l, m.last)
		if err != nil {
			m.hold(batch[i+1:])
			return fmt.Errorf("dead letter %s was sent back but not deleted from %s (%w): it reappears there and the worker answers the duplicate from its idempotency record", l.ID, m.t.DLQ, err)
		}
		if m.o.Progress != nil {
			m.o.Progress(len(m.moved))
		}
	}
	return nil
}

// wait keeps the rate: it returns when the next send is due, or false when ctx ends first.
func (m *mover) wait(ctx context.Context) bool {
	wait := time.Until(m.last.Add(m.gap))
	if wait <= 0 {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}

// hold keeps letters to make visible again at the end.
func (m *mover) hold(letters []Letter) {
	for _, l := range letters {
		m.held = append(m.held, l.receipt)
	}
}

// send puts l's body back on the class queue without the diagnosis the worker added (the
// redriven message starts over), keeping the producer's attributes (traceparent...) and
// stamped with the session's AttrRedrive. FIFO: the letter's group, and a deduplication id
// derived from the dead letter's id.
func send(ctx context.Context, api API, t *Target, l Letter, stamp types.MessageAttributeValue) (string, error) {
	attrs := map[string]types.MessageAttributeValue{AttrRedrive: stamp}
	for k, v := range l.Attributes {
		switch k {
		case queue.AttrErrorCode, queue.AttrErrorMessage, queue.AttrRetryAttempts, AttrRedrive:
			continue
		}
		if slices.Contains(eventBridgeAttrs, k) || queue.DeferralAttribute(k) {
			continue // a fairness deferral's carried counts: the redriven message starts over
		}
		attrs[k] = v
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(t.QueueURL), MessageBody: aws.String(l.Body), MessageAttributes: attrs}
	if t.FIFO {
		in.MessageGroupId = aws.String(groupOf(t, l))
		in.MessageDeduplicationId = aws.String(dedupPrefix + l.ID)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	out, err := api.SendMessage(cctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.MessageId), nil
}

// groupOf is a FIFO letter's group: its MessageGroupId, else (kumo omits it) the class's
// group_by field of its detail, as the worker derives it.
func groupOf(t *Target, l Letter) string {
	if l.GroupID != "" {
		return l.GroupID
	}
	if t.GroupBy != "" {
		if env, err := wire.ParseEnvelope([]byte(l.Body)); err == nil {
			if g := wire.DetailField(env.Detail, t.GroupBy); g != "" {
				return g
			}
		}
	}
	return queue.DeadLetterGroup
}

// Count is n with its noun.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, strings.TrimSuffix(noun, "s"))
}
