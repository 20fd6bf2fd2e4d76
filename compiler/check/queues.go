package check

import (
	"fmt"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

var queueRules = []Rule{
	{
		ID: "Q001", Category: "queues", Severity: diag.Error,
		Summary: "step.max > 0 and ≥ p95; visibility ≥ 1.5 × step.max, or > 2 × the worker's heartbeat",
		Explain: `SQS hides a received message for the visibility timeout; if the step is still running when
it expires, a second worker receives the same message and the step runs twice
(event-driven-agent-fleets: "visibility_timeout >= worst-case step time × safety margin").
fleetc's margin is 1.5 × step.max. A worker that heartbeats (ChangeMessageVisibility every
step.heartbeat) needs its heartbeat to land well before visibility runs out, always: one
late heartbeat must be survivable, and fleet-worker refuses heartbeat ≥ visibility.
step.max sizes the function timeout and visibility (0 makes both 0) and must bound p95.
Formula: 0 < step.max, step.p95 ≤ step.max; visibility ≥ 1.5 × step.max unless the worker
heartbeats; heartbeat > 0 ⇒ heartbeat < visibility / 2.
Fix: state real step.p95/max; raise queue.visibility (≤ 12 h) or set step.heartbeat
below half of it.`,
		Check: checkVisibilityCoversStep,
	},
	{
		ID: "Q002", Category: "queues", Severity: diag.Error,
		Summary: "visibility timeout ≤ 12 h",
		Explain: `SQS visibility timeouts range from 0 to 43,200 s (12 h); the default is 30 s. AWS refuses
a queue or ChangeMessageVisibility call beyond the maximum.
Steps that can run longer than 12 h cannot be protected by visibility alone: run them on a
worker that heartbeats (eks, agentcore), checkpoint, and split the step.
Fix: set queue.visibility to 12h or less.`,
		Check: checkVisibilityMax,
	},
	{
		ID: "Q003", Category: "queues", Severity: diag.Error,
		Summary: "queue retention within 1 min … 14 d",
		Explain: `SQS keeps an unconsumed message for the retention period: 4 days by default, 1 minute to
14 days (1,209,600 s) at most. AWS refuses values outside the range, for the class queue
and for its dead-letter queue alike.
Size retention before anything else: a backlog older than retention is deleted unread.
Fix: set queue.retention / queue.dlq_retention between 1m and 14d.`,
		Check: checkRetentionRange,
	},
	{
		ID: "Q004", Category: "queues", Severity: diag.Error,
		Summary: "dead-letter queue retention > source queue retention",
		Explain: `A message keeps its original enqueue time when SQS moves it to the dead-letter queue, so
the DLQ's retention clock has already been running in the source queue. If the DLQ
retention is not longer than the source's, a DLQ backlog older than retention is gone
before anyone triages it (event-driven-agent-fleets: "size retention before you size
anything else"; its DLQ keeps 14 d against the source's 4 d default).
Fix: keep queue.dlq_retention at 14d and queue.retention below it.`,
		Check: checkDLQRetention,
	},
	{
		ID: "Q005", Category: "queues", Severity: diag.Warning,
		Summary: "max_receives > 3 on a standard queue: age-of-oldest alarms under-report",
		Explain: `On standard queues with maxReceiveCount > 3, a message received three or more times
without deletion is moved to the back of the queue, so ApproximateAgeOfOldestMessage then
reflects the next message under the threshold: the age alarm under-reports exactly when
a poison message is cycling.
FIFO queues do not reorder and are not affected.
Fix: set queue.max_receives to 3 or less, or accept the blind spot and alarm on DLQ depth.`,
		Check: checkMaxReceives,
	},
	{
		ID: "Q006", Category: "queues", Severity: diag.Error,
		Summary: "long polling on (0–20 s; 0 = short polling warns)",
		Explain: `ReceiveMessage waits up to WaitTimeSeconds for a message: 0 to 20 s. 0 is short polling,
which samples a subset of servers, returns empty responses and bills every empty call;
the seed's queue is set to 20 s ("never short-poll a worker fleet").
A wait above 20 s is refused by SQS (error); 0 s is a warning.
Fix: set queue.long_poll to 20s (fleetc's default).`,
		Check: checkLongPoll,
	},
	{
		ID: "Q007", Category: "queues", Severity: diag.Error,
		Summary: "FIFO group key present, required and ≤ 128 chars (≤ 119 when a fan-out dispatches) in the consumed event",
		Explain: `A FIFO queue requires a MessageGroupId on every message, at most 128 characters. fleetc
takes it from the consumed event's detail field named by ordering.group_by (one
conversation per group: per-conversation order, cross-conversation parallelism).
The field must be declared in the event's detail schema, listed in required, and bounded:
a string with maxLength ≤ 128, or an integer. A message without it is refused by SQS.
Unbatched fan-out items get their own group "<key>#<item index>"; a Distributed Map reads
up to 100 million items (index ≤ 8 digits), so such a key needs maxLength ≤ 119.
Fix: set ordering.group_by, and declare it in the event: {type: string, maxLength: 128}
(119 for fan-out classes) and in required.`,
		Check: checkFIFOGroup,
	},
	{
		ID: "Q008", Category: "queues", Severity: diag.Error,
		Summary: "projected FIFO rate within 300 TPS per action, or the region's high-throughput ceiling",
		Explain: `FIFO queues without high-throughput mode do 300 TPS per API action (3,000 messages/s with
10-message batches). EventBridge sends one SendMessage per event, so the class's step
rate is the SendMessage TPS. High-throughput mode raises the ceiling to 70,000 TPS in
us-east-1, us-west-2 and eu-west-1, and 19,000–2,400 TPS elsewhere (2,400 is used).
Formula: TPS = conversations_per_minute × steps_per_conversation / 60 / number of
classes (each class is assumed an equal share of the steps).
Fix: set ordering.high_throughput: true, use a standard queue, or split the class.`,
		Check: checkFIFORate,
	},
	{
		ID: "Q009", Category: "queues", Severity: diag.Error,
		Summary: "class payloads may exceed SQS's 1 MiB without claim-check",
		Explain: `An SQS message is 1 byte to 1 MiB (1,048,576 bytes). fleet-worker moves a payload to S3
and sends a reference (claim-check) when it is larger than payload.claim_check_over.
The largest inline payload is min(payload.max, payload.claim_check_over) (claim_check_over
alone when payload.max is not declared); above 1 MiB the send fails.
Fix: set payload.claim_check_over at or below 1MiB (fleetc's default is 200KiB, which also
fits Step Functions' 256 KiB state payload).`,
		Check: checkSQSPayload,
	},
	{
		ID: "Q010", Category: "queues", Severity: diag.Error,
		Summary: "projected in-flight messages ≤ 120,000 per queue (warn above 25 %)",
		Explain: `A standard queue holds roughly 120,000 messages received but not deleted; past it, short
polling returns OverLimit and long polling silently returns nothing.
Formula (Little's law): in-flight = class steps/s × step duration, where class steps/s =
conversations_per_minute × steps_per_conversation / 60 / number of classes, and the
duration is traffic.step_duration, else the class's step.p95. The seed's worked fleet on
one queue (125 steps/s × 90 s = 11,250) sits at 9.4 %; above 25 % (30,000) this warns, above
120,000 it is an error.
Fix: split the class across queues, shorten steps, or re-plan the traffic.`,
		Check: checkInFlight,
	},
	{
		ID: "Q011", Category: "queues", Severity: diag.Error,
		Summary: "queue delay within 0–15 min",
		Explain: `SQS delivery delay (DelaySeconds, the queue-wide default of the per-message timer)
ranges from 0 to 15 minutes (900 s); AWS refuses larger values, for the queue attribute
and for a message timer alike.
A delay is a wait, not a schedule: longer waits belong to the workflow (a Wait state).
Fix: set queue.delay to 15m or less; schedule longer waits in a workflow (Step Functions
Wait) or with EventBridge Scheduler.`,
		Check: checkDelay,
	},
}

func checkVisibilityCoversStep(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.StepMax <= 0 {
			r.Add(a.Path+"/step/max",
				fmt.Sprintf("class %s: step.max %s; the function timeout and queue visibility derived from it would be 0", a.Name, dur(a.StepMax)),
				"Set step.max to the worst-case step time (e.g. 5m).")
			continue
		}
		if a.StepP95 > a.StepMax {
			r.Add(a.Path+"/step/p95",
				fmt.Sprintf("class %s: step.p95 %s is above step.max %s", a.Name, dur(a.StepP95), dur(a.StepMax)),
				"step.max is the worst case and bounds p95; raise step.max or correct step.p95.")
		}
		v := a.Queue.Visibility
		path := queueField(f, a, "visibility")
		need := ir.VisibilityFor(a.StepMax)
		if a.Heartbeat > 0 && 2*a.Heartbeat >= v {
			hpath := at(f, a.Path+"/step/heartbeat", path)
			r.Add(hpath,
				fmt.Sprintf("class %s: heartbeat %s is not below half the visibility %s (%s); one late heartbeat lets the message reappear",
					a.Name, dur(a.Heartbeat), dur(v), dur(v/2)),
				fmt.Sprintf("Set step.heartbeat below %s (fleetc's default is visibility / 3 = %s), or raise queue.visibility above %s.",
					dur(v/2), dur(v/3), dur(2*a.Heartbeat)))
			continue
		}
		if v >= need || a.Heartbeat > 0 {
			continue
		}
		r.Add(path,
			fmt.Sprintf("class %s: visibility %s is below 1.5 × step.max %s (%s) and the worker does not heartbeat",
				a.Name, dur(v), dur(a.StepMax), dur(need)),
			fmt.Sprintf("A step outliving visibility is received twice. Set queue.visibility to at least %s, or set step.heartbeat.", dur(need)))
	}
}

func checkVisibilityMax(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Queue.Visibility > ir.MaxVisibility {
			r.Add(queueField(f, a, "visibility"),
				fmt.Sprintf("visibility %s is above SQS's 43,200 s (12h) maximum", dur(a.Queue.Visibility)),
				"Set queue.visibility to 12h or less; for longer steps heartbeat (eks, agentcore) or split the step.")
		}
		if a.DLQ.Visibility > ir.MaxVisibility {
			r.Add(a.Path, fmt.Sprintf("dead-letter queue %s: visibility %s is above SQS's 12h maximum", a.DLQ.Name, dur(a.DLQ.Visibility)),
				"This is set by fleetc; please report it.")
		}
	}
	if f.TargetDLQ.Visibility > ir.MaxVisibility {
		r.Add("/bus", fmt.Sprintf("target dead-letter queue %s: visibility %s is above SQS's 12h maximum", f.TargetDLQ.Name, dur(f.TargetDLQ.Visibility)),
			"This is set by fleetc; please report it.")
	}
}

func retentionOK(d time.Duration) bool {
	return d >= minRetention && d <= maxRetention
}

func checkRetentionRange(f *ir.Fleet, r *Reporter) {
	const fix = "SQS keeps messages 1 minute to 14 days (default 4d)."
	for _, a := range f.Agents {
		if !retentionOK(a.Queue.Retention) {
			r.Add(queueField(f, a, "retention"),
				fmt.Sprintf("queue retention %s is outside SQS's 1m–14d range", dur(a.Queue.Retention)),
				"Set queue.retention between 1m and 14d. "+fix)
		}
		if !retentionOK(a.DLQ.Retention) {
			r.Add(queueField(f, a, "dlq_retention"),
				fmt.Sprintf("dead-letter queue retention %s is outside SQS's 1m–14d range", dur(a.DLQ.Retention)),
				"Set queue.dlq_retention between 1m and 14d (14d lets the DLQ outlive its source). "+fix)
		}
	}
	if f.TargetDLQ.Name != "" && !retentionOK(f.TargetDLQ.Retention) {
		r.Add("/bus", fmt.Sprintf("target dead-letter queue retention %s is outside SQS's 1m–14d range", dur(f.TargetDLQ.Retention)),
			"This is set by fleetc; please report it.")
	}
}

func checkDLQRetention(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.DLQ.Retention > a.Queue.Retention {
			continue
		}
		path := at(f, a.Path+"/queue/dlq_retention", "/defaults/queue/dlq_retention", a.Path+"/queue/retention", "/defaults/queue/retention")
		detail := "Keep queue.dlq_retention at 14d and queue.retention below it."
		if a.Queue.Retention >= maxRetention {
			detail = "SQS retention stops at 14d, so the source queue must keep less: set queue.retention below 14d (4d is the default)."
		}
		r.Add(path,
			fmt.Sprintf("class %s: dead-letter retention %s does not exceed source retention %s; aged messages expire in the DLQ before triage",
				a.Name, dur(a.DLQ.Retention), dur(a.Queue.Retention)),
			detail)
	}
}

func checkMaxReceives(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Queue.FIFO || a.Queue.MaxReceives <= ageAlarmReceives {
			continue
		}
		r.Warn(queueField(f, a, "max_receives"),
			fmt.Sprintf("max_receives %d on a standard queue: messages received 3+ times move to the back, so age-of-oldest alarms under-report", a.Queue.MaxReceives),
			"Set queue.max_receives to 3, or alarm on DLQ depth rather than message age.")
	}
}

func checkLongPoll(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		lp := a.Queue.LongPoll
		switch {
		case lp > maxLongPoll:
			r.Add(queueField(f, a, "long_poll"),
				fmt.Sprintf("long_poll %s is above SQS's 20 s maximum wait", dur(lp)),
				"Set queue.long_poll to 20s.")
		case lp == 0:
			r.Warn(queueField(f, a, "long_poll"),
				"long_poll 0s short-polls: empty receives are billed and messages can be missed",
				"Set queue.long_poll to 20s (fleetc's default); never short-poll a worker fleet.")
		}
	}
}

func checkFIFOGroup(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if !a.FIFO {
			continue
		}
		if a.GroupBy == "" {
			r.Add(a.Path+"/ordering",
				fmt.Sprintf("class %s: FIFO ordering without group_by; SQS requires a MessageGroupId on every message", a.Name),
				"Set ordering.group_by to the detail field that identifies a session, e.g. conversation_id.")
			continue
		}
		if a.Consumes == nil || a.Consumes.Event == nil {
			continue // dispatched by workflows only: the state input carries the key
		}
		ev := a.Consumes.Event
		gpath := a.Path + "/ordering/group_by"
		prop := requiredDetailKey(r, ev, gpath, "FIFO group key", a.GroupBy, "a message without it is refused")
		if prop == nil {
			continue
		}
		ppath := spec.Pointer("events", ev.DetailType, "detail", "properties", a.GroupBy)
		switch typ := prop["type"]; typ {
		case "integer":
		case "string":
			ml, ok := number(prop["maxLength"])
			if !ok || ml > maxGroupKey {
				r.Add(ppath,
					fmt.Sprintf("FIFO group key %q of event %s is not bounded to 128 characters (MessageGroupId ≤ 128)", a.GroupBy, ev.DetailType),
					"Add maxLength: 128 (or less) to the property.")
			} else if fo := itemGroupFanOut(f, a); fo != nil && ml > fanOutGroupKey {
				r.Add(ppath,
					fmt.Sprintf("FIFO group key %q of event %s allows %s characters; fan-out %s sends item groups \"<key>#<index>\" of up to %s, above SQS's 128", a.GroupBy, ev.DetailType, num(ml), fo.Name, num(ml+9)),
					fmt.Sprintf("Set maxLength: %d on the property (128 − '#' − 8 index digits for up to 100 million items), or set the fan-out's batch_input (batches keep the plain key).", fanOutGroupKey))
			}
		default:
			r.Add(ppath,
				fmt.Sprintf("FIFO group key %q of event %s must be a string (maxLength ≤ 128) or an integer, not %v", a.GroupBy, ev.DetailType, typeName(typ)),
				"Declare the property as {type: string, maxLength: 128}.")
		}
	}
}

// requiredDetailKey reports key, a class's detail field named at path (label: what the class
// uses it for), when it is not a property of ev's detail or not required there (missing: what
// then befalls a message without it), and returns its declared schema: nil when undeclared.
func requiredDetailKey(r *Reporter, ev *ir.Event, path, label, key, missing string) map[string]any {
	props, _ := ev.Detail["properties"].(map[string]any)
	prop, ok := props[key].(map[string]any)
	if !ok {
		r.Add(path,
			fmt.Sprintf("%s %q is not a property of event %s's detail", label, key, ev.DetailType),
			fmt.Sprintf("Declare %s under events.%s.detail.properties ({type: string, maxLength: 128}) and list it in required.", key, ev.DetailType))
		return nil
	}
	if !listed(ev.Detail["required"], key) {
		r.Add(path,
			fmt.Sprintf("%s %q is not required in event %s; %s", label, key, ev.DetailType, missing),
			fmt.Sprintf("Add %s to events.%s.detail.required.", key, ev.DetailType))
	}
	return prop
}

// fanOutGroupKey is the longest group key a fan-out item group "<key>#<index>" leaves room
// for: 128 − 1 ('#') − 8 (a Distributed Map reads up to 100 million items: index ≤ 99,999,999).
const fanOutGroupKey = maxGroupKey - 1 - 8

// itemGroupFanOut is the first unbatched fan-out dispatching to a, whose items each get
// the MessageGroupId "<key>#<index>" (see compiler/asl), or nil.
func itemGroupFanOut(f *ir.Fleet, a *ir.Agent) *ir.Step {
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			if st.Agent == a && st.FanOut != nil && st.FanOut.BatchInputBytes == 0 {
				return st
			}
		}
	}
	return nil
}

func checkFIFORate(f *ir.Fleet, r *Reporter) {
	m := capacity.Of(f)
	for _, a := range f.Agents {
		tps := m.ClassStepsPerSec(a)
		if !a.FIFO || tps == 0 {
			continue
		}
		limit, mode := capacity.FIFOLimit(f, a)
		if tps > limit {
			path := a.Path + "/ordering"
			if a.HighThroughput {
				path += "/high_throughput"
			}
			detail := "Set ordering.high_throughput: true (70,000 TPS in us-east-1/us-west-2/eu-west-1), use a standard queue, or split the class."
			if a.HighThroughput {
				detail = "Use a standard queue, split the class across queues, or request a quota increase."
			}
			r.Add(path,
				fmt.Sprintf("FIFO queue %s: projected %s SendMessage TPS exceeds %s TPS %s", a.Queue.Name, num(tps), num(limit), mode),
				detail)
		}
	}
}

func checkSQSPayload(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if n := inline(a); n > sqsMaxMessage {
			r.Add(at(f, a.Path+"/payload/claim_check_over", a.Path+"/payload/max", a.Path+"/payload"),
				fmt.Sprintf("class %s: payloads up to %s travel inline, above SQS's 1 MiB (1,048,576 bytes) message limit", a.Name, bytesOf(n)),
				"Set payload.claim_check_over to 1MiB or less (200KiB fits Step Functions too).")
		}
	}
}

func checkInFlight(f *ir.Fleet, r *Reporter) {
	m := capacity.Of(f)
	for _, a := range f.Agents {
		rate := m.ClassStepsPerSec(a)
		if rate == 0 {
			continue
		}
		n := m.InFlight(a)
		d, path := m.StepDuration(a)
		msg := fmt.Sprintf("queue %s: projected %s messages in flight (%s steps/s × %s) is %s of the ~120,000 cap",
			a.Queue.Name, num(n), num(rate), dur(d), pct(n, capacity.InFlightCap))
		switch {
		case n > capacity.InFlightCap:
			r.Add(path, msg, "Past the cap SQS returns OverLimit; split the class across queues, shorten steps, or lower the traffic.")
		case n > capacity.InFlightCap/4:
			r.Warn(path, msg, "Above 25 % of the cap, doubling traffic or step latency nears OverLimit; plan a split now.")
		}
	}
}

func checkDelay(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Queue.Delay < 0 || a.Queue.Delay > maxQueueDelay {
			r.Add(queueField(f, a, "delay"),
				fmt.Sprintf("queue delay %s is outside SQS's 0–15m range", dur(a.Queue.Delay)),
				"Set queue.delay to 15m or less; schedule longer waits in a workflow.")
		}
	}
}

// Small JSON Schema helpers.

func listed(v any, name string) bool {
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok && s == name {
			return true
		}
	}
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case interface{ Float64() (float64, error) }:
		x, err := n.Float64()
		return x, err == nil
	}
	return 0, false
}

func typeName(v any) string {
	if v == nil {
		return "untyped"
	}
	return fmt.Sprint(v)
}
