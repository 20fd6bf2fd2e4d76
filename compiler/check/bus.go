package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

var busRules = []Rule{
	{
		ID: "E001", Category: "bus", Severity: diag.Error,
		Summary: "≤ 5 targets per rule",
		Explain: `An EventBridge rule has at most 5 targets; the quota is not adjustable.
fleetc makes one rule per consuming class with one target (the class queue), so a fleet
built from fleet.yaml cannot break this; the check counts targets per rule name in the IR
and guards any future lowering that merges rules.
Formula: targets(rule) = number of classes sharing the rule name.
Fix: give each consuming class its own rule (fleetc's default).`,
		Check: checkTargetsPerRule,
	},
	{
		ID: "E002", Category: "bus", Severity: diag.Error,
		Summary: "≤ 300 rules per bus (100 in af-south-1, eu-south-1)",
		Explain: `An event bus holds 300 rules (100 in af-south-1 and eu-south-1); the quota is adjustable
but a fresh account starts there. fleetc makes one rule per consuming class; an archive
adds the managed rule EventBridge installs to keep replayed events out of the archive.
Formula: rules = consuming classes + 1 if the bus has an archive.
Fix: merge classes that consume the same event into fewer classes, move some classes to a
second fleet (a second bus), or request a quota increase before deploying.`,
		Check: checkRulesPerBus,
	},
	{
		ID: "E003", Category: "bus", Severity: diag.Error,
		Summary: "event pattern ≤ 2,048 characters",
		Explain: `An EventBridge event pattern is at most 2,048 characters. fleetc renders each consuming
class's pattern from the event's detail-type and source plus consumes.match; long match
value lists grow it.
Formula: length of the compact JSON pattern.
Fix: shorten consumes.match (match on a class or category field instead of enumerating
values), or split the class.`,
		Check: checkPatternSize,
	},
	{
		ID: "E004", Category: "bus", Severity: diag.Error,
		Summary: "≤ 30 rules with wildcards per bus",
		Explain: `A bus holds at most 30 rules whose patterns use wildcard matching; the quota is not
adjustable. fleet.yaml match values are literals, so today's fleets cannot break this;
the check counts patterns containing a "wildcard" operator in the IR and guards any future
pattern feature.
Fix: match on exact values, or on a field that carries the category you were wildcarding.`,
		Check: checkWildcardRules,
	},
	{
		ID: "E005", Category: "bus", Severity: diag.Error,
		Summary: "retry attempts 0–185, max event age 60–86,400 s",
		Explain: `An EventBridge target RetryPolicy takes MaximumRetryAttempts 0–185 and
MaximumEventAgeInSeconds 60–86,400 (24 h); AWS refuses other values.
fleetc's default is 24 attempts over 1 h (the seed's bounded policy), not the classic
185 / 24 h.
Fix: set delivery.attempts within 0–185 and delivery.max_age within 60s–24h.`,
		Check: checkRetryRange,
	},
	{
		ID: "E006", Category: "bus", Severity: diag.Warning,
		Summary: "retry left at the classic 185 attempts / 24 h: outages hide for a day",
		Explain: `The classic-bus default retry policy, 185 attempts over 24 h with backoff, means a target
that went down at 09:00 keeps receiving retries until 09:00 tomorrow, and recovery is a
duplicate-laden thundering herd nobody saw coming. Bounded retries with a DLQ and an alarm
turn a silent 24-hour degradation into a 5-minute page.
Fix: delivery: { attempts: 24, max_age: 1h } (fleetc's default), and alarm on the DLQ.`,
		Check: checkClassicRetry,
	},
	{
		ID: "E007", Category: "bus", Severity: diag.Error,
		Summary: "every rule target has a dead-letter queue",
		Explain: `Without a target DLQ, an event whose retries run out is dropped; the only trace is the
EventsDropped metric. That is a silent-loss configuration: never ship a target without one.
fleetc always attaches the fleet's delivery DLQ (<fleet>-delivery-dlq) to every target, so
fleet.yaml cannot break this; the check guards the IR (hand-built or future lowering).
Fix: give every rule target a dead_letter_config.`,
		Check: checkTargetDLQ,
	},
	{
		ID: "E008", Category: "bus", Severity: diag.Error,
		Summary: "a rule-target DLQ is a standard queue in the bus's region",
		Explain: `EventBridge refuses a FIFO queue as a rule-target DLQ, and the DLQ must live in the same
region as the rule. fleetc creates one standard delivery DLQ per fleet, in the fleet's
region (the IR has no per-queue region: everything is created in fleet.region), so
fleet.yaml cannot break this; the check guards the IR against a FIFO target DLQ.
Fix: use a standard queue as the target DLQ even when the class queue is FIFO.`,
		Check: checkTargetDLQStandard,
	},
	{
		ID: "E009", Category: "bus", Severity: diag.Error,
		Summary: "v2 bus: delivery max_age set explicitly",
		Explain: `The EventsV2 bus model resets target retry defaults to 5 attempts over 300 s, against
185 / 24 h on classic targets. A design that relied on retry headroom must set
MaximumEventAgeInSeconds explicitly or events dead-letter after five minutes of outage.
fleetc asks for delivery.max_age in the spec of every class on a v2 bus so the reader sees
the window. V2 also caps an account at 5 V2 buses per region: a fleet has one bus, so
that cap is an account fact fleetc cannot see; count your V2 buses before migrating.
Fix: set defaults.delivery.max_age (or the class's delivery.max_age).`,
		Check: checkV2MaxAge,
	},
	{
		ID: "E010", Category: "bus", Severity: diag.Error,
		Summary: "PutEvents ≤ 10 entries (classic bus), request < 1 MB",
		Explain: `A classic-bus PutEvents request carries up to 10 entries (fleetc creates only classic buses: E017), and the
whole request must stay under 1 MB (1,048,576 bytes); one entry may use the full 1 MB
alone. Entry size: Time 14 bytes + UTF-8 lengths of Source, DetailType and Detail.
Formula: the largest inline payload of an emitting class, min(payload.max,
payload.claim_check_over), must fit 1,048,576 − (14 + len(source) + len(detail-type)).
fleet-worker's batcher sizes its batches to the generated bus (the IR's MaxEntries is checked).
Fix: set payload.claim_check_over below 1MiB so large results go to S3 (claim-check).`,
		Check: checkPutEventsLimits,
	},
	{
		ID: "E011", Category: "bus", Severity: diag.Error,
		Summary: "projected PutEvents requests/s within the region's quota",
		Explain: `PutEvents is throttled per account and region: 10,000 rps in us-east-1, us-west-2 and
eu-west-1; 2,400 in us-east-2, eu-central-1 and eu-south-2; 400–1,200 elsewhere (400 is
used). Formula: completion events/s = Σ over emitting classes of class steps/s × events
emitted; requests/s = events/s ÷ 10 entries per batch (classic bus). The seed's
worked fleet: 125 events/s ÷ 10 = 12.5 rps.
Fix: request a quota increase (adjustable), or emit fewer events.`,
		Check: checkPutEventsRate,
	},
	{
		ID: "E012", Category: "bus", Severity: diag.Warning,
		Summary: "projected target invocations above 18,750/s: delivery is delayed",
		Explain: `EventBridge throttles target invocations at 18,750/s in us-east-1; that is the only
region the seed quotes, so fleetc applies it everywhere. Past it invocations are delayed, not dropped: benign
at low rates, a latency landmine at fleet scale.
Formula: invocations/s = Σ over consuming classes of class steps/s (one rule target each).
Fix: request a quota increase, or move high-rate classes to a second bus.`,
		Check: checkInvocations,
	},
	{
		ID: "E013", Category: "bus", Severity: diag.Error,
		Summary: "no archive replay into non_idempotent classes beyond their idempotency window, nor to targets outside the fleet",
		Explain: `Archived events can be replayed, and every rule on the bus matches a replayed event as it
did the first time: replay is a re-execution of history. For a non_idempotent class only
the idempotency table stands between recovery and duplicate side effects, and it forgets
keys after idempotency.window. An archive that keeps events longer (absent retention keeps
them forever) can replay work whose key has expired.
A rule targeting something outside the fleet (tool.notify: an API destination, a client's
queue) has no table at all: a replay re-delivers every archived completion to the client.
Formula: archive retention (∞ if absent) ≤ idempotency window of each non_idempotent class,
and no archive beside a tool.notify rule.
Fix: set bus.archive.retention ≤ the window, raise the class's idempotency.window, or drop
the archive; drop the archive or the tool.notify. fleetc replay --event reaches only the
consuming classes' rules.`,
		Check: checkArchiveReplay,
	},
	{
		ID: "E014", Category: "bus", Severity: diag.Error,
		Summary: "every event has an explicit version and a required trace_id",
		Explain: `Queue, bus and state machine each own a different id space (message id, event id,
execution ARN); nothing stitches them unless the envelope carries a stable trace_id
through every layer and workers put it on their spans. Version the contract explicitly
so consumers can evolve additively.
Check: events.<name>.version ≥ 1 and detail declares trace_id under properties and in
required.
Fix: add trace_id: {type: string} to the detail properties and to required.`,
		Check: checkEventContract,
	},
	{
		ID: "E015", Category: "bus", Severity: diag.Error,
		Summary: "consumes.match fields are properties declared in the consumed event's detail schema",
		Explain: `A class's rule matches detail.<field> against the listed values. EventBridge accepts a
pattern on any field name, so a misspelt field (agent_clas) deploys fine and the rule
silently never matches: the class's queue stays empty and its events go nowhere.
fleetc compares each consumes.match field with the properties of the consumed event's
detail schema, the contract producers are validated against.
Check: every key of consumes.match is a key of events.<event>.detail.properties.
Fix: correct the field name (the message suggests the closest property), or declare the
property in the event's detail schema.`,
		Check: checkMatchFields,
	},
}

func checkTargetsPerRule(f *ir.Fleet, r *Reporter) {
	byRule := map[string][]*ir.Agent{}
	var names []string
	for _, a := range f.Agents {
		if a.Rule == nil {
			continue
		}
		if _, ok := byRule[a.Rule.Name]; !ok {
			names = append(names, a.Rule.Name)
		}
		byRule[a.Rule.Name] = append(byRule[a.Rule.Name], a)
	}
	sort.Strings(names)
	for _, n := range names {
		as := byRule[n]
		if len(as) <= maxTargetsPerRule {
			continue
		}
		var cls []string
		for _, a := range as {
			cls = append(cls, a.Name)
		}
		r.Add(as[0].Path+"/consumes",
			fmt.Sprintf("rule %s has %d targets (%s); EventBridge allows 5 per rule", n, len(as), strings.Join(cls, ", ")),
			"Give each consuming class its own rule.")
	}
}

func countRules(f *ir.Fleet) int {
	names := map[string]bool{}
	for _, a := range f.Agents {
		if a.Rule != nil {
			names[a.Rule.Name] = true
		}
	}
	n := len(names)
	if f.Bus.Archive != nil {
		n++
	}
	return n
}

func checkRulesPerBus(f *ir.Fleet, r *Reporter) {
	n, limit := countRules(f), rulesPerBus(f.Region)
	if n > limit {
		r.Add("/agents",
			fmt.Sprintf("bus %s needs %d rules; EventBridge allows %d per bus in %s", f.Bus.Name, n, limit, f.Region),
			"Merge consuming classes, move some to a second fleet, or request a quota increase before deploying.")
	}
}

func checkPatternSize(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Rule == nil {
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // count characters as EventBridge sees them, not \u003c escapes
		if err := enc.Encode(a.Rule.Pattern); err != nil {
			continue
		}
		if n := len([]rune(strings.TrimSpace(buf.String()))); n > maxPatternChars {
			r.Add(at(f, a.Path+"/consumes/match", a.Path+"/consumes"),
				fmt.Sprintf("class %s: event pattern is %s characters; EventBridge allows 2,048", a.Name, inum(n)),
				"Match on a field that names the category instead of enumerating values, or split the class.")
		}
	}
}

// hasWildcard reports whether a pattern uses the wildcard operator anywhere.
func hasWildcard(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "wildcard" || hasWildcard(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasWildcard(e) {
				return true
			}
		}
	}
	return false
}

func checkWildcardRules(f *ir.Fleet, r *Reporter) {
	var with []*ir.Agent
	for _, a := range f.Agents {
		if a.Rule != nil && hasWildcard(a.Rule.Pattern) {
			with = append(with, a)
		}
	}
	if len(with) > maxWildcardRules {
		r.Add(with[maxWildcardRules].Path+"/consumes",
			fmt.Sprintf("bus %s has %d rules with wildcards; EventBridge allows 30 (not adjustable)", f.Bus.Name, len(with)),
			"Match on exact values instead of wildcards.")
	}
}

func checkRetryRange(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Rule == nil {
			continue
		}
		if d := a.Delivery; d.Attempts < 0 || d.Attempts > maxDeliveryAttempts {
			r.Add(deliveryField(f, a, "attempts"),
				fmt.Sprintf("delivery attempts %d is outside EventBridge's 0–185 range", d.Attempts),
				"Set delivery.attempts between 0 and 185 (24 is fleetc's default).")
		}
		if m := a.Delivery.MaxAge; m < minEventAge || m > maxEventAge {
			r.Add(deliveryField(f, a, "max_age"),
				fmt.Sprintf("delivery max_age %s (%s) is outside EventBridge's 60–86,400 s range", dur(m), secs(m)),
				"Set delivery.max_age between 60s and 24h (1h is fleetc's default).")
		}
	}
}

func checkClassicRetry(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Rule == nil || a.Delivery.Attempts < maxDeliveryAttempts || a.Delivery.MaxAge < maxEventAge {
			continue
		}
		r.Warn(deliveryField(f, a, "max_age"),
			fmt.Sprintf("delivery retries %d times over %s: a target outage stays invisible for a day", a.Delivery.Attempts, dur(a.Delivery.MaxAge)),
			"Bound retries (attempts: 24, max_age: 1h) and alarm on the delivery DLQ.")
	}
}

func checkTargetDLQ(f *ir.Fleet, r *Reporter) {
	if f.TargetDLQ.Name != "" {
		return
	}
	for _, a := range f.Agents {
		if a.Rule != nil {
			r.Add(a.Path+"/consumes",
				fmt.Sprintf("rule %s's target has no dead-letter queue: events that exhaust retries are dropped", a.Rule.Name),
				"Attach a standard SQS queue as the target's dead_letter_config.")
		}
	}
}

func checkTargetDLQStandard(f *ir.Fleet, r *Reporter) {
	q := f.TargetDLQ
	if q.Name == "" {
		return
	}
	if q.FIFO || strings.HasSuffix(q.Name, ".fifo") {
		r.Add("/bus",
			fmt.Sprintf("target dead-letter queue %s is FIFO; EventBridge accepts only standard queues as rule-target DLQs", q.Name),
			"Use a standard queue for the delivery DLQ, even for FIFO class queues.")
	}
}

func checkV2MaxAge(f *ir.Fleet, r *Reporter) {
	if f.Bus.RequestedModel != "v2" {
		return
	}
	for _, a := range f.Agents {
		if a.Rule == nil || a.Delivery.MaxAgeExplicit {
			continue
		}
		r.Add(a.Path+"/delivery/max_age",
			fmt.Sprintf("class %s on a v2 bus leaves delivery max_age implicit (v2 default: 5 attempts over 300 s)", a.Name),
			"Set defaults.delivery.max_age (or this class's delivery.max_age) explicitly, e.g. 1h.")
	}
}

// envelope is the PutEvents entry size beyond the detail: Time (14 bytes), Source, DetailType.
func envelope(ev *ir.Event) int64 {
	return int64(14 + len(ev.Source) + len(ev.DetailType))
}

func checkPutEventsLimits(f *ir.Fleet, r *Reporter) {
	if limit := ir.ClassicBusMaxEntries; f.Bus.MaxEntries < 1 || f.Bus.MaxEntries > limit {
		r.Add(at(f, "/bus/model", "/bus"),
			fmt.Sprintf("PutEvents batches of %d entries on a classic bus; EventBridge allows 1–%d", f.Bus.MaxEntries, limit),
			"Batch at most 10 entries per request: the generated bus is a classic bus.")
	}
	for _, a := range f.Agents {
		var worst *ir.Event
		for _, ev := range a.Emits {
			if worst == nil || envelope(ev) > envelope(worst) {
				worst = ev
			}
		}
		if worst == nil {
			continue
		}
		max := int64(putEventsMaxBytes) - envelope(worst)
		if n := inline(a); n > max {
			r.Add(at(f, a.Path+"/payload/claim_check_over", a.Path+"/payload/max", a.Path+"/payload"),
				fmt.Sprintf("class %s: %s events may carry %s inline; a PutEvents entry fits %s of detail (1,048,576 − %d envelope)",
					a.Name, worst.DetailType, bytesOf(n), bytesOf(max), envelope(worst)),
				"Set payload.claim_check_over below 1MiB so large results travel as an S3 reference (claim-check).")
		}
	}
}

func checkPutEventsRate(f *ir.Fleet, r *Reporter) {
	m := capacity.Of(f)
	ev, rps := m.EmittedPerSec(), m.PutEventsPerSec()
	if q := capacity.PutEventsRPS(f.Region); rps > q {
		r.Add(at(f, "/traffic/conversations_per_minute", "/traffic"),
			fmt.Sprintf("projected %s PutEvents requests/s (%s events/s ÷ %d per batch) exceeds %s rps in %s",
				num(rps), num(ev), f.Bus.MaxEntries, num(q), f.Region),
			"Request a PutEvents quota increase (adjustable), or emit fewer events.")
	}
}

func checkInvocations(f *ir.Fleet, r *Reporter) {
	if inv := capacity.Of(f).InvocationsPerSec(); inv > capacity.InvocationsPerSec {
		r.Warn(at(f, "/traffic/conversations_per_minute", "/traffic"),
			fmt.Sprintf("projected %s target invocations/s exceeds EventBridge's 18,750/s throttle; delivery will be delayed", num(inv)),
			"Request an invocations quota increase or move high-rate classes to a second bus.")
	}
}

// ReplaySafe is rule E013's reasoning for one class: replaying events up to reach old (0:
// unbounded, an archive kept forever) into class a cannot repeat its side effects. Only a
// non_idempotent class is at risk, and only for events older than its idempotency window,
// whose keys the table has forgotten. fleetc replay asks it at run time with the reach of
// the replay into the archive as deployed.
func ReplaySafe(a *ir.Agent, reach time.Duration) bool {
	if a.SideEffects != "non_idempotent" {
		return true
	}
	return reach > 0 && reach <= a.Idempotency.Window
}

// Redelivery is a rule on the fleet's bus whose target is outside the fleet: whatever it
// matches in a replay is delivered there again, with no idempotency table in between.
type Redelivery struct {
	Rule   string    // the rule's name
	Class  *ir.Agent // whose tool.notify it is
	Target string    // what it delivers to, for messages
	Events []string  // the detail-types it matches, sorted
	Path   string
}

// Redeliveries are the fleet's rules with a target outside it, in class order: each async
// class's tool.notify rule, which pushes its completion events to an API destination or to
// the queue a client reads. fleetc replay refuses a replay that reaches one (only
// --event's rule filter leaves them out), and E013 an archive beside one.
func Redeliveries(f *ir.Fleet) []Redelivery {
	var out []Redelivery
	for _, a := range f.Agents {
		if a.Tool == nil || a.Tool.Notify == nil || len(a.Emits) == 0 {
			continue
		}
		nt := a.Tool.Notify
		target := "API destination " + nt.APIDestination
		if nt.APIDestination == "" {
			target = "queue " + nt.Queue + ", read by a client"
		}
		var events []string
		for _, e := range a.Emits {
			events = append(events, e.DetailType)
		}
		slices.Sort(events)
		out = append(out, Redelivery{Rule: nt.Rule, Class: a, Target: target, Events: slices.Compact(events), Path: nt.Path})
	}
	return out
}

func checkArchiveReplay(f *ir.Fleet, r *Reporter) {
	ar := f.Bus.Archive
	if ar == nil {
		return
	}
	for _, rd := range Redeliveries(f) {
		r.Add(rd.Path,
			fmt.Sprintf("the archive keeps %s's completion events (%s), and its tool.notify rule %s delivers them to %s outside the fleet: a replay re-delivers every one",
				rd.Class.Name, strings.Join(rd.Events, ", "), rd.Rule, rd.Target),
			fmt.Sprintf("Drop bus.archive, or %s's tool.notify (clients poll the job's status instead). fleetc replay --event replays only to consuming classes' rules.", rd.Class.Name))
	}
	for _, a := range f.Agents {
		if a.Rule == nil || ReplaySafe(a, ar.Retention) {
			continue
		}
		kept := "forever"
		if ar.Retention > 0 {
			kept = "for " + dur(ar.Retention)
		}
		r.Add(at(f, "/bus/archive/retention", "/bus/archive"),
			fmt.Sprintf("the archive keeps events %s but non_idempotent class %s remembers keys for %s: replay re-executes its side effects",
				kept, a.Name, dur(a.Idempotency.Window)),
			fmt.Sprintf("Set bus.archive.retention to %s or less, raise %s's idempotency.window, or drop the archive.", dur(a.Idempotency.Window), a.Name))
	}
}

func checkEventContract(f *ir.Fleet, r *Reporter) {
	for _, ev := range f.Events {
		if ev.Version < 1 {
			r.Add(ev.Path+"/version", fmt.Sprintf("event %s has no explicit version", ev.DetailType), "Set version: 1 and bump it on breaking changes.")
		}
		props, _ := ev.Detail["properties"].(map[string]any)
		if _, ok := props["trace_id"]; !ok {
			r.Add(at(f, ev.Path+"/detail/properties", ev.Path+"/detail"),
				fmt.Sprintf("event %s does not carry trace_id: nothing stitches queue, bus and workflow ids together", ev.DetailType),
				"Add trace_id: {type: string} to the detail properties and to required.")
			continue
		}
		if !listed(ev.Detail["required"], "trace_id") {
			r.Add(at(f, ev.Path+"/detail/required", ev.Path+"/detail"),
				fmt.Sprintf("event %s declares trace_id but does not require it", ev.DetailType),
				"Add trace_id to the detail's required list.")
		}
	}
}

func checkMatchFields(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Consumes == nil || a.Consumes.Event == nil {
			continue
		}
		ev := a.Consumes.Event
		props, _ := ev.Detail["properties"].(map[string]any)
		known := slices.Sorted(maps.Keys(props))
		for _, m := range a.Consumes.Match {
			if _, ok := props[m.Field]; ok {
				continue
			}
			summary := fmt.Sprintf("class %s matches detail field %q, which event %s does not declare; the rule never matches", a.Name, m.Field, ev.DetailType)
			if s := spec.Suggest(m.Field, known); s != "" {
				summary += fmt.Sprintf("; did you mean %q?", s)
			}
			detail := fmt.Sprintf("Event %s declares no detail properties; declare %s under events.%s.detail.properties.", ev.DetailType, m.Field, ev.DetailType)
			if len(known) > 0 {
				detail = fmt.Sprintf("Declared in events.%s.detail.properties: %s. Correct the field, or declare it there.", ev.DetailType, strings.Join(known, ", "))
			}
			r.Add(spec.Pointer("agents", a.Name, "consumes", "match", m.Field), summary, detail)
		}
	}
}
