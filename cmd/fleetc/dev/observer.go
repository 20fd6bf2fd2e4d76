package dev

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler/ir"
)

// observerClass is the name the observer's lines carry in the interleaved log.
const observerClass = "observer"

// observer is dev's catch-all: a rule on the fleet's bus matching every source of the
// fleet's events, delivering to a queue of its own, so every event is seen, including the
// ones no class consumes. It counts what each class was submitted.
type observer struct {
	d         *Fleet
	name, url string
	mu        sync.Mutex
	byType    map[string]int
	submitted map[string]int // by class
	unclaimed int
}

func newObserver(ctx context.Context, d *Fleet) (*observer, error) {
	o := &observer{d: d, name: d.ir.Name + "-dev-observer", byType: map[string]int{}, submitted: map[string]int{}}
	q, err := d.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(o.name)})
	if err != nil {
		return nil, fmt.Errorf("observer queue: %w", err)
	}
	o.url = aws.ToString(q.QueueUrl)
	attrs, err := d.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, fmt.Errorf("observer queue: %w", err)
	}
	var sources []string
	for _, e := range d.ir.Events {
		if !contains(sources, e.Source) {
			sources = append(sources, e.Source)
		}
	}
	sort.Strings(sources)
	pattern, _ := json.Marshal(map[string]any{"source": sources})
	if _, err := d.eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(o.name), EventBusName: aws.String(d.ir.Bus.Name),
		EventPattern: aws.String(string(pattern)), Description: aws.String("fleetc dev: every event of the fleet, for the live page")}); err != nil {
		return nil, fmt.Errorf("observer rule: %w", err)
	}
	if _, err := d.eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(o.name), EventBusName: aws.String(d.ir.Bus.Name),
		Targets: []ebtypes.Target{{Id: aws.String("observer"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}}}); err != nil {
		return nil, fmt.Errorf("observer target: %w", err)
	}
	return o, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// remove deletes the observer's rule and queue (they are not in Terraform's state).
func (o *observer) remove(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	bus := aws.String(o.d.ir.Bus.Name)
	_, _ = o.d.eb.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String(o.name), EventBusName: bus, Ids: []string{"observer"}})
	_, _ = o.d.eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String(o.name), EventBusName: bus})
	_, _ = o.d.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(o.url)})
}

// envelope is the part of an EventBridge event the observer reads.
type envelope struct {
	ID         string         `json:"id"`
	TaskToken  string         `json:"TaskToken"`
	DetailType string         `json:"detail-type"`
	Source     string         `json:"source"`
	Detail     map[string]any `json:"detail"`
}

func (o *observer) run(ctx context.Context, out *prefixer) {
	for ctx.Err() == nil {
		r, err := o.d.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(o.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			if ctx.Err() == nil {
				out.line(observerClass, "receive: "+err.Error())
				time.Sleep(time.Second)
			}
			continue
		}
		for _, m := range r.Messages {
			o.seen([]byte(aws.ToString(m.Body)), out, time.Now())
			_, _ = o.d.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(o.url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// seen takes one event the observer's queue delivered at now: the classes it is submitted
// to, the counts, its line in the log (and its detail with --verbose) and its journal entry.
func (o *observer) seen(body []byte, out *prefixer, now time.Time) {
	var e envelope
	if json.Unmarshal(body, &e) != nil {
		return
	}
	consumers := o.d.consumers(&e)
	traceID, _ := e.Detail[traceField].(string)
	for _, c := range consumers {
		o.d.sup.led.submit(c, traceID, now)
	}
	o.mu.Lock()
	o.byType[e.DetailType]++
	for _, c := range consumers {
		o.submitted[c]++
	}
	if len(consumers) == 0 {
		o.unclaimed++
	}
	o.mu.Unlock()
	to := "consumed by " + strings.Join(consumers, ", ")
	if len(consumers) == 0 {
		to = "consumed by no class"
	}
	// Whoever put the event on the bus wrote its type, source and trace id: one line each.
	out.line(observerClass, fmt.Sprintf("%s from %s (trace %s): %s", view.OneLine(e.DetailType), view.OneLine(e.Source), view.OneLine(traceID), to))
	entry := o.entry(&e, body, traceID, to, now)
	o.d.journal.add(entry)
	if o.d.opts.Verbose {
		out.line(observerClass, fmt.Sprintf("detail (trace %s): %s", view.OneLine(traceID), payloadLine(entry.Payloads[0])))
	}
}

// entry is an event on the bus as the journal keeps it, seen at: its detail bounded, the
// values of secretNames redacted (a handler may have put one in what it emitted).
func (o *observer) entry(e *envelope, body []byte, traceID, consumedBy string, at time.Time) trace.Entry {
	var raw struct {
		Detail json.RawMessage `json:"detail"`
	}
	_ = json.Unmarshal(body, &raw)
	return trace.Entry{Time: at.UTC(), Source: trace.SourceBus, Where: e.Source, What: e.DetailType, ID: e.ID, Detail: consumedBy,
		TraceID: traceID, Payloads: []trace.Payload{trace.NewPayload(trace.PayloadDetail, o.d.redact.apply(raw.Detail))}}
}

func (o *observer) counts() (byType map[string]int, submitted map[string]int, unclaimed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	byType, submitted = map[string]int{}, map[string]int{}
	for k, v := range o.byType {
		byType[k] = v
	}
	for k, v := range o.submitted {
		submitted[k] = v
	}
	return byType, submitted, o.unclaimed
}

// consumers are the classes whose rule matches e: its detail-type, source and every
// matched field.
func (d *Fleet) consumers(e *envelope) []string {
	var out []string
	for _, a := range d.ir.ConsumersOf(e.DetailType, e.Source) {
		if a.Consumes.Matches(e.Detail) {
			out = append(out, a.Name)
		}
	}
	return out
}

// pipe stands in for a FIFO class's EventBridge Pipe, which the emulator creates but never
// runs: it moves each event from the ingress queue into the FIFO queue with the pipe's
// group (detail.<group_by>) and deduplication id (the event id), then deletes it. A message
// it cannot move stays for the ingress queue's redrive, as the pipe's failures do.
func (d *Fleet) pipe(ctx context.Context, a *ir.Agent, q queueURLs) {
	for ctx.Err() == nil {
		r, err := d.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.ingress), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(time.Second)
			}
			continue
		}
		for _, m := range r.Messages {
			var e envelope
			body := aws.ToString(m.Body)
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				d.sup.out.line(a.Name, "pipe: ingress message is not an event: "+err.Error())
				continue
			}
			// A workflow task (sent here by the emulator override's definition) carries its
			// token instead of an event id: its hash deduplicates.
			dedup := e.ID
			if e.TaskToken != "" {
				sum := sha256.Sum256([]byte(e.TaskToken))
				dedup = hex.EncodeToString(sum[:16])
			}
			group, ok := e.Detail[a.GroupBy]
			if !ok || dedup == "" {
				d.sup.out.line(a.Name, fmt.Sprintf("pipe: message %s has no detail.%s: left for the ingress queue's redrive", aws.ToString(m.MessageId), a.GroupBy))
				continue
			}
			if _, err := d.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.queue), MessageBody: aws.String(body),
				MessageGroupId: aws.String(fmt.Sprint(group)), MessageDeduplicationId: aws.String(dedup)}); err != nil {
				d.sup.out.line(a.Name, "pipe: "+err.Error())
				continue
			}
			_, _ = d.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.ingress), ReceiptHandle: m.ReceiptHandle})
		}
	}
}
