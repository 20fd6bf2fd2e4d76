package dlq

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Peek settings. A peeked message is hidden for peekVisibility while the peek runs and made
// visible again as soon as it ends; if fleetc dies mid-peek, SQS shows it again by itself.
const (
	peekVisibility = 30 // seconds
	peekWait       = 1  // seconds: a long poll asks every SQS server, a short one only some
	DefaultLimit   = 1000
)

// Letter is one dead letter and the diagnosis fleet-worker wrote on it.
type Letter struct {
	ID         string
	Body       string
	Code       wire.Code
	Message    string
	Attempts   int
	SentAt     time.Time // when it was dead-lettered (the DLQ message's SentTimestamp)
	GroupID    string    // FIFO: MessageGroupId
	TargetARN  string    // of the delivery DLQ: the target EventBridge could not reach
	Attributes map[string]types.MessageAttributeValue
	receipt    string
}

// letterFrom reads an SQS message of a DLQ.
func letterFrom(m types.Message) Letter {
	l := Letter{ID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), receipt: aws.ToString(m.ReceiptHandle),
		Attributes: m.MessageAttributes, Code: wire.Unknown}
	if v, ok := m.MessageAttributes[queue.AttrErrorCode]; ok && aws.ToString(v.StringValue) != "" {
		l.Code = wire.Code(aws.ToString(v.StringValue))
	}
	if v, ok := m.MessageAttributes[queue.AttrErrorMessage]; ok {
		l.Message = aws.ToString(v.StringValue)
	}
	if v, ok := m.MessageAttributes[queue.AttrRetryAttempts]; ok {
		l.Attempts, _ = strconv.Atoi(aws.ToString(v.StringValue))
	}
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		l.SentAt = time.UnixMilli(ms).UTC()
	}
	l.GroupID = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	l.TargetARN = letterTarget(m)
	return l
}

// Depth is a queue's approximate message counts.
type Depth struct {
	Visible, InFlight int
}

// QueueDepth reads url's approximate counts.
func QueueDepth(ctx context.Context, api API, url string) (Depth, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return Depth{}, err
	}
	var d Depth
	d.Visible, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	d.InFlight, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return d, nil
}

// Peeked is what a peek saw.
type Peeked struct {
	Letters []Letter
	// Depth is the DLQ's approximate size; Elsewhere how many of it the peek could not see
	// because another reader held them.
	Depth, Elsewhere int
	// Complete: every message the queue reported was seen. A peek misses messages that are
	// in flight (another reader holds them), beyond the limit, or, on a FIFO DLQ, behind
	// another message of their group.
	Complete bool
	Limited  bool // stopped at the limit
}

// Peek reads up to limit messages of url without consuming them: each is received with a
// short visibility, never deleted, and made visible again when the peek ends.
func Peek(ctx context.Context, api API, url string, limit int) (*Peeked, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	p := &Peeked{}
	seen := map[string]bool{}
	var receipts []string
	defer func() { release(context.WithoutCancel(ctx), api, url, receipts) }()
	for len(p.Letters) < limit {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MaxNumberOfMessages: int32(min(10, limit-len(p.Letters))), VisibilityTimeout: peekVisibility, WaitTimeSeconds: peekWait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"}})
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, m := range out.Messages {
			receipts = append(receipts, aws.ToString(m.ReceiptHandle))
			l := letterFrom(m)
			if seen[l.ID] {
				continue
			}
			seen[l.ID] = true
			fresh++
			p.Letters = append(p.Letters, l)
		}
		if fresh == 0 {
			break
		}
	}
	// Counted while the peek still holds what it saw: those are in flight by us, the rest
	// is what it missed. (Counted before the peek, kumo would still show an earlier peek's
	// released messages as in flight: it updates its counts only on receive.)
	d, err := QueueDepth(ctx, api, url)
	if err != nil {
		return nil, err
	}
	n := len(p.Letters)
	p.Depth = max(d.Visible+d.InFlight, n)
	p.Elsewhere = max(d.InFlight-n, 0)
	p.Limited = n >= limit && n < p.Depth
	p.Complete = n >= p.Depth
	sort.SliceStable(p.Letters, func(i, j int) bool { return p.Letters[i].SentAt.Before(p.Letters[j].SentAt) })
	return p, nil
}

// release makes received messages visible again, ten per call. A failure only delays them
// by their visibility timeout.
func release(ctx context.Context, api API, url string, receipts []string) {
	for start := 0; start < len(receipts); start += 10 {
		batch := receipts[start:min(start+10, len(receipts))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
		for i, r := range batch {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r), VisibilityTimeout: 0}
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _ = api.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
		cancel()
	}
}

// Group is the dead letters of one ERROR_CODE.
type Group struct {
	Code      wire.Code `json:"code"`
	Count     int       `json:"count"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	Sample    Sample    `json:"sample"`
}

// Sample is one dead letter shown as an example of its group (the most recent).
type Sample struct {
	MessageID string `json:"message_id"`
	Message   string `json:"error_message"`
	Attempts  int    `json:"retry_attempts"`
	Body      string `json:"body"`
	Truncated bool   `json:"body_truncated,omitempty"`
}

// maxSampleBody bounds a sample's body in the report.
const maxSampleBody = 512

// GroupByCode groups letters by ERROR_CODE, the largest group first (then by code). Each
// group's sample is its most recent letter; between letters sent in the same millisecond
// (SentTimestamp's resolution) the one whose body, then id, sorts last, so the report does
// not follow the order SQS happened to return them in.
func GroupByCode(letters []Letter) []Group {
	by := map[wire.Code]*Group{}
	sampled := map[wire.Code]Letter{}
	for _, l := range letters {
		g := by[l.Code]
		if g == nil {
			g = &Group{Code: l.Code, FirstSeen: l.SentAt}
			by[l.Code] = g
		}
		g.Count++
		if l.SentAt.Before(g.FirstSeen) {
			g.FirstSeen = l.SentAt
		}
		prev, ok := sampled[l.Code]
		if !ok || l.SentAt.After(prev.SentAt) || l.SentAt.Equal(prev.SentAt) && cmp.Or(cmp.Compare(l.Body, prev.Body), cmp.Compare(l.ID, prev.ID)) > 0 {
			sampled[l.Code] = l
			g.LastSeen = l.SentAt
			body := queue.SanitizeAttribute(l.Body, maxSampleBody) // cut on a rune boundary
			cut := len(body) < len(l.Body)
			g.Sample = Sample{MessageID: l.ID, Message: l.Message, Attempts: l.Attempts, Body: body, Truncated: cut}
		}
	}
	out := make([]Group, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// Codes lists the codes of groups, for messages.
func Codes(gs []Group) string {
	s := ""
	for i, g := range gs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s (%d)", g.Code, g.Count)
	}
	return s
}
