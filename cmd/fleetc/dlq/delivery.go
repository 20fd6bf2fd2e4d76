package dlq

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The attributes EventBridge writes on an event it could not deliver to a target, beside
// ERROR_CODE, ERROR_MESSAGE and RETRY_ATTEMPTS (Amazon EventBridge User Guide, "Using
// dead-letter queues to process undelivered events").
const (
	AttrRuleARN                 = "RULE_ARN"
	AttrTargetARN               = "TARGET_ARN"
	AttrExhaustedRetryCondition = "EXHAUSTED_RETRY_CONDITION"
)

// eventBridgeAttrs are the delivery diagnosis a redriven copy leaves behind, like the
// worker's: the copy starts over.
var eventBridgeAttrs = []string{AttrRuleARN, AttrTargetARN, AttrExhaustedRetryCondition}

// DeliveryReport is the bus's delivery DLQ in `fleetc dlq`: the events EventBridge gave up
// delivering to a target (a class queue, a tool, a notify destination), grouped by its
// ERROR_CODE and by the target it could not reach. These never reached a class queue, so no
// class DLQ shows them; the seed's triage starts here.
type DeliveryReport struct {
	DLQ              string        `json:"dlq"`
	Depth            int           `json:"depth"`
	InFlight         int           `json:"in_flight"`
	OldestAgeSeconds *float64      `json:"oldest_age_seconds"`
	Peeked           int           `json:"peeked"`
	Complete         bool          `json:"complete"`
	Incomplete       string        `json:"incomplete,omitempty"`
	Codes            []Group       `json:"codes"`
	Targets          []TargetCount `json:"targets"`
}

// TargetCount is how many undelivered events name one target.
type TargetCount struct {
	Target string `json:"target_arn"`
	// Class is the class whose queue the target is ("" when it is no class queue): the
	// CLASS of `fleetc dlq redrive FILE CLASS --delivery`.
	Class string `json:"class,omitempty"`
	Count int    `json:"count"`
}

// DeliveryOf is the delivery DLQ of the fleet as a redrive source for t's class: its letters
// addressed to t's queue go back there.
func DeliveryOf(t *Target, deliveryDLQ string) *Target {
	c := *t
	c.classDLQ, c.classDLQURL = t.DLQ, t.DLQURL
	c.DLQ, c.DLQURL = deliveryDLQ, ""
	c.delivery = true
	return &c
}

// returnsTo is the DLQ where a redriven copy that fails again lands: the class DLQ, also
// for a letter taken from the delivery DLQ (its copy is now on the class queue).
func (t *Target) returnsTo() (name, url string) {
	if t.delivery {
		return t.classDLQ, t.classDLQURL
	}
	return t.DLQ, t.DLQURL
}

// Delivery reports whether t reads the bus's delivery DLQ rather than its class DLQ.
func (t *Target) Delivery() bool { return t.delivery }

// addressedTo reports whether letter l of t's DLQ is t's to redrive: every letter of a class
// DLQ; of the delivery DLQ, those EventBridge meant for t's queue.
func (t *Target) addressedTo(l Letter) bool {
	return !t.delivery || queueOfARN(l.TargetARN) == t.Queue
}

// ForClass keeps the letters t would redrive.
func (t *Target) ForClass(ls []Letter) []Letter {
	var out []Letter
	for _, l := range ls {
		if t.addressedTo(l) {
			out = append(out, l)
		}
	}
	return out
}

// queueOfARN is the queue name of an SQS ARN (arn:aws:sqs:REGION:ACCOUNT:NAME), "" for any
// other ARN.
func queueOfARN(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return ""
	}
	return parts[5]
}

// InspectDelivery peeks at the delivery DLQ (url) and names the class of each target.
func InspectDelivery(ctx context.Context, api API, name, url string, classes []*Target, limit int, now time.Time) (*DeliveryReport, error) {
	p, err := Peek(ctx, api, url, limit)
	if err != nil {
		return nil, fmt.Errorf("peek the delivery DLQ %s: %w", name, err)
	}
	r := &DeliveryReport{DLQ: name, Depth: p.Depth, InFlight: p.Elsewhere, Peeked: len(p.Letters), Complete: p.Complete,
		Codes: GroupByCode(p.Letters), Targets: []TargetCount{}, Incomplete: p.why(limit, false)}
	if len(p.Letters) > 0 {
		age := now.Sub(p.Letters[0].SentAt).Seconds()
		r.OldestAgeSeconds = &age
	}
	byQueue := map[string]string{}
	for _, t := range classes {
		byQueue[t.Queue] = t.Class
	}
	counts := map[string]int{}
	for _, l := range p.Letters {
		counts[l.TargetARN]++
	}
	for arn, n := range counts {
		r.Targets = append(r.Targets, TargetCount{Target: arn, Class: byQueue[queueOfARN(arn)], Count: n})
	}
	sort.Slice(r.Targets, func(i, j int) bool {
		if r.Targets[i].Count != r.Targets[j].Count {
			return r.Targets[i].Count > r.Targets[j].Count
		}
		return r.Targets[i].Target < r.Targets[j].Target
	})
	return r, nil
}

// writeText prints the delivery DLQ's part of `fleetc dlq`.
func (d *DeliveryReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nbus delivery (%s): %s", d.DLQ, Count(d.Depth, "undelivered event"))
	if d.OldestAgeSeconds != nil {
		fmt.Fprintf(w, ", oldest %s", Age(time.Duration(*d.OldestAgeSeconds*float64(time.Second))))
	}
	fmt.Fprintln(w)
	if d.Incomplete != "" {
		fmt.Fprintf(w, "  peek incomplete: %s\n", d.Incomplete)
	}
	for _, tc := range d.Targets {
		to := "not a class queue"
		if tc.Class != "" {
			to = "class " + tc.Class + ": fleetc dlq redrive FILE " + tc.Class + " --delivery"
		}
		// The ARN is whatever the message says: one line of it, as every other attribute.
		fmt.Fprintf(w, "  to %s  %4d  (%s)\n", oneLine(tc.Target), tc.Count, to)
	}
	writeGroups(w, d.Codes)
}

// letterTarget reads the target EventBridge names on an undelivered event.
func letterTarget(m types.Message) string {
	if v, ok := m.MessageAttributes[AttrTargetARN]; ok {
		return aws.ToString(v.StringValue)
	}
	return ""
}
