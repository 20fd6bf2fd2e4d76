package queue

import (
	"context"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/schemas/awslimits"
)

// Fairness (Options.KeyOf, Options.MaxPerKey): at most MaxPerKey steps of one key run at
// once in this consumer. A message over its key's cap is deferred without ever being
// released: releasing it would make SQS count one more receive, and enough deferrals would
// dead-letter a message that never failed. Instead its copy is sent to the back of the queue,
// delayed until the key's cap likely has room for it (deferDelay), with MessageGroupId = the
// key so an SQS fair queue sees the tenant, and the original is deleted once the copy is
// accepted. The copy carries the receives that ran (AttrPriorReceives), its deferrals and its
// first send time, so its receive limit and age are the original's. A crash between the send
// and the delete leaves two copies: the idempotency record answers the second (the body, and
// so the work key, is the same). When the copy cannot be sent the message runs over the cap:
// fairness is best effort, delivery is not (docs/fairness.md).

// Message attributes a deferred copy carries.
const (
	AttrPriorReceives = "fleet-prior-receives"
	AttrDeferrals     = "fleet-deferrals"
	AttrFirstSent     = "fleet-first-sent"
)

// DeferralAttribute reports the attributes a dead letter leaves behind: a message moved back
// from the DLQ starts a fresh count (its attempts are in RETRY_ATTEMPTS), so no earlier
// deferral may shorten its receive budget.
func DeferralAttribute(name string) bool {
	return name == AttrPriorReceives || name == AttrDeferrals || name == AttrFirstSent
}

// admit names m's fairness key and takes one of its slots if the key is under its cap;
// key "" is never capped.
func (c *Consumer) admit(m *Message) (key string, admitted bool) {
	if c.o.MaxPerKey <= 0 || c.o.KeyOf == nil {
		return "", true
	}
	if key = c.o.KeyOf(m); key == "" {
		return "", true
	}
	return key, c.takeKey(key, false)
}

// runFair runs m, admitted under its key's cap (admit), or defers it.
func (c *Consumer) runFair(ctx context.Context, m *Message, key string, admitted bool) {
	if key == "" {
		c.runGroup(ctx, []*Message{m})
		return
	}
	if !admitted {
		if c.stopping.Load() || m.Lost() {
			c.runGroup(ctx, []*Message{m}) // releases it unstarted, or leaves it
			return
		}
		if c.deferMessage(ctx, m, key) {
			return
		}
		c.Stats.OverCap.Add(1)
		c.takeKey(key, true)
	}
	defer c.dropKey(key)
	c.runGroup(ctx, []*Message{m})
}

// passingDeferred reports whether messages were deferred since the last call: the receives
// are passing over a capped key's backlog, and a slot freed by a deferral should receive at
// once instead of lingering for a fuller batch (which would add Linger per deferred message
// to the other keys' wait).
func (c *Consumer) passingDeferred() bool {
	if c.o.MaxPerKey <= 0 {
		return false
	}
	d := c.Stats.Deferred.Load()
	return c.seenDeferred.Swap(d) != d
}

// takeKey counts one more step of key unless the key is at its cap (force: count it anyway).
func (c *Consumer) takeKey(key string, force bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !force && c.perKey[key] >= c.o.MaxPerKey {
		return false
	}
	c.perKey[key]++
	return true
}

func (c *Consumer) dropKey(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.perKey[key]--; c.perKey[key] <= 0 {
		delete(c.perKey, key)
	}
}

// InFlight is how many steps of key run now.
func (c *Consumer) InFlight(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.perKey[key]
}

// deferMessage sends m's copy to the back of the queue and deletes m; false when the copy
// could not be sent (m is untouched).
func (c *Consumer) deferMessage(ctx context.Context, m *Message, key string) bool {
	n := m.deferrals + 1
	attrs, ok := deferredAttributes(m, n)
	if !ok {
		c.log.Warn("fairness: no room for the deferral attributes; running over the key's cap", "message_id", m.ID, "key", key)
		return false
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(c.o.QueueURL),
		MessageBody:       aws.String(m.Body),
		MessageAttributes: attrs,
		DelaySeconds:      int32(c.deferDelay(key, time.Now()) / time.Second),
	}
	if validGroupID(key) {
		in.MessageGroupId = aws.String(key)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	if _, err := c.api.SendMessage(cctx, in); err != nil {
		c.log.Warn("fairness: deferral failed; running over the key's cap", "message_id", m.ID, "key", key, "err", err)
		return false
	}
	c.Stats.Deferred.Add(1)
	c.apply(ctx, m, Outcome{Action: Delete})
	return true
}

// deferredAttributes are m's attributes plus the counts its copy carries; false when they
// do not fit SQS's 10 attributes.
func deferredAttributes(m *Message, deferrals int) (map[string]types.MessageAttributeValue, bool) {
	attrs := maps.Clone(m.MessageAttributes)
	if attrs == nil {
		attrs = map[string]types.MessageAttributeValue{}
	}
	number := func(v int64) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.FormatInt(v, 10))}
	}
	// The receive that deferred it ran nothing: it does not count.
	attrs[AttrPriorReceives] = number(int64(m.ReceiveCount - 1))
	attrs[AttrDeferrals] = number(int64(deferrals))
	if sent := m.SentAt(); !sent.IsZero() {
		attrs[AttrFirstSent] = number(sent.UnixMilli())
	}
	return attrs, len(attrs) <= maxAttributes
}

// carryCounts adds a deferred copy's carried receives to its receive count and restores its
// first send time (see deferMessage).
func (m *Message) carryCounts() {
	attr := func(name string) int64 {
		v, ok := m.MessageAttributes[name]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(aws.ToString(v.StringValue), 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	// A sender can set these attributes: a forged huge count must not wrap the sum negative
	// (a negative attempt never reaches the retry limit); capped, it only shortens its own
	// message's budget.
	m.ReceiveCount += int(min(attr(AttrPriorReceives), math.MaxInt32))
	m.deferrals = int(min(attr(AttrDeferrals), math.MaxInt32))
	if first := attr(AttrFirstSent); first > 0 {
		m.Attributes = maps.Clone(m.Attributes)
		if m.Attributes == nil {
			m.Attributes = map[string]string{}
		}
		m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)] = strconv.FormatInt(first, 10)
	}
}

// deferDelay is when key's next deferred copy should come back (DeferSchedule), per consumer:
// with R workers each defers about 1/R of the backlog and serves the key at the same rate.
func (c *Consumer) deferDelay(key string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.nextDefer) > maxDeferSchedule {
		for k, t := range c.nextDefer {
			if t.Before(now) {
				delete(c.nextDefer, k)
			}
		}
	}
	next, delay := DeferSchedule(c.nextDefer[key].Sub(now), c.o.DeferDelay, c.o.MaxPerKey)
	c.nextDefer[key] = now.Add(next)
	return delay
}

// DeferSchedule is a key's deferral schedule, shared with fleetc simulate: given how long from
// now the key's previous copy comes back (prev, ≤ 0 when past), the next copy comes back next
// from now, one step per slot of the cap after the previous one, so a backlog returns at about
// the rate the cap can serve it instead of every copy at once, at most SQS's 15-minute message
// timer; it is sent with delay, next in whole seconds (at least 1).
func DeferSchedule(prev, step time.Duration, maxPerKey int) (next, delay time.Duration) {
	next = min(max(prev, 0)+step/time.Duration(maxPerKey), awslimits.SQSMaxDelay)
	return next, max((next+time.Second-1)/time.Second*time.Second, time.Second)
}

// maxDeferSchedule is how many keys' schedules a consumer keeps before it forgets the ones
// already past.
const maxDeferSchedule = 1024

// validGroupID reports whether key can be a MessageGroupId: 1 to 128 characters of
// printable ASCII other than space. Any other key still gets its cap, without the group.
func validGroupID(key string) bool {
	if len(key) == 0 || len(key) > awslimits.SQSMaxGroupIDChars {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}
