package review

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/ir"
)

// Posture is what decides how a fleet behaves under failure, as tables of settings: each row
// names the setting as the spec does (so a finding reads like the YAML the reviewer sees),
// reads it from the IR, and says when a change of it is worse (a warning) rather than news
// (info). The IR itself links classes, events and workflows both ways, which is no shape to
// diff; a row per setting also keeps the rule beside the field it judges.

// value is one setting as posture compares and shows it.
type value struct {
	n    int64  // what "worse when" rules compare: a duration, a count, 1/0 for a flag, a list's length
	text string // as fleet.yaml writes it
	gone bool   // the side does not have it (a workflow step added or removed)
}

func durValue(d time.Duration) value {
	if d == 0 {
		return value{text: "0 (none)"}
	}
	return value{n: int64(d), text: specDuration(d)}
}
func intValue[N int | int64](n N) value { return value{n: int64(n), text: fmt.Sprint(n)} }
func boolValue(b bool) value {
	if b {
		return value{n: 1, text: "true"}
	}
	return value{text: "false"}
}
func strValue(s string) value {
	if s == "" {
		return value{text: "(none)"}
	}
	return value{text: s}
}
func listValue(l []string) value {
	return value{n: int64(len(l)), text: "[" + strings.Join(l, ", ") + "]"}
}

// absent shows a part of a setting group that one side does not have (a workflow step).
var absent = value{text: "(none)", gone: true}

// A rule says whether a change from o to n is worse, and why (the why may be empty).
type rule func(o, n value) (bool, string)

func rises(why string) rule { return func(o, n value) (bool, string) { return n.n > o.n, why } }
func falls(why string) rule { return func(o, n value) (bool, string) { return n.n < o.n, why } }
func toZero(why string) rule {
	return func(_, n value) (bool, string) { return n.n == 0, why }
}
func anyChange(why string) rule { return func(value, value) (bool, string) { return true, why } }

// A setting is one row of a posture table.
type setting[T any] struct {
	name  string
	get   func(T) value
	worse rule // nil: a change is information
}

// entry is one setting of one part, read.
type entry struct {
	name  string
	v     value
	worse rule
	// group marks a whole workflow step: compared only for being there (its settings are
	// entries of their own).
	group bool
}

func read[T any](table []setting[T], x T, prefix string) []entry {
	out := make([]entry, len(table))
	for i, s := range table {
		out[i] = entry{name: prefix + s.name, v: s.get(x), worse: s.worse}
	}
	return out
}

var classSettings = []setting[*ir.Agent]{
	{"runtime", func(a *ir.Agent) value { return strValue(a.Runtime) }, nil},
	{"ordering.fifo", func(a *ir.Agent) value { return boolValue(a.FIFO) }, anyChange("")},
	{"ordering.group_by", func(a *ir.Agent) value { return strValue(a.GroupBy) }, anyChange("")},
	{"step.p95", func(a *ir.Agent) value { return durValue(a.StepP95) }, nil},
	{"step.max", func(a *ir.Agent) value { return durValue(a.StepMax) }, nil},
	{"step.heartbeat", func(a *ir.Agent) value { return durValue(a.Heartbeat) },
		toZero("no heartbeat: a long step is visible again mid-run")},
	{"step.deadline", func(a *ir.Agent) value { return durValue(a.Deadline) }, nil},
	{"queue.visibility", func(a *ir.Agent) value { return durValue(a.Queue.Visibility) },
		falls("a step that outlives the visibility timeout reappears and runs twice")},
	{"queue.retention", func(a *ir.Agent) value { return durValue(a.Queue.Retention) },
		falls("messages (or dead letters awaiting triage) expire sooner")},
	{"queue.max_receives", func(a *ir.Agent) value { return intValue(a.Queue.MaxReceives) },
		rises("a poison message is received more often before it reaches the DLQ")},
	{"queue.dlq_retention", func(a *ir.Agent) value { return durValue(a.DLQ.Retention) },
		falls("messages (or dead letters awaiting triage) expire sooner")},
	{"delivery.attempts", func(a *ir.Agent) value { return intValue(a.Delivery.Attempts) },
		rises("EventBridge retries a failing target longer before the DLQ sees it: an outage stays silent longer")},
	{"delivery.max_age", func(a *ir.Agent) value { return durValue(a.Delivery.MaxAge) },
		func(o, n value) (bool, string) {
			return n.n > o.n, "events of an unreachable target are retried silently for up to " + n.text + " (seed: bound it, not the classic 24 h)"
		}},
	{"idempotency.window", func(a *ir.Agent) value { return durValue(a.Idempotency.Window) },
		func(o, n value) (bool, string) {
			return n.n < o.n, "a duplicate arriving after " + n.text + " runs the work again"
		}},
	{"idempotency.key", func(a *ir.Agent) value { return listValue(a.Idempotency.Key) },
		anyChange("work keys change: a redelivery of work done under the old key runs again")},
	{"side_effects", func(a *ir.Agent) value { return strValue(a.SideEffects) }, anyChange("")},
	{"model", func(a *ir.Agent) value {
		if a.Model == nil {
			return strValue("")
		}
		return strValue(a.Model.Name)
	}, nil},
	{"scaling.min", func(a *ir.Agent) value { return intValue(a.Scaling.Min) }, nil},
	{"scaling.max", func(a *ir.Agent) value { return intValue(a.Scaling.Max) }, nil},
	{"scaling.per_replica", func(a *ir.Agent) value { return intValue(a.Scaling.PerReplica) }, nil},
	{"payload.claim_check_over", func(a *ir.Agent) value { return intValue(a.ClaimCheckOver) }, nil},
	{"payload.max", func(a *ir.Agent) value { return intValue(a.MaxPayload) }, nil},
	{"consumes.event", func(a *ir.Agent) value {
		if a.Consumes == nil {
			return strValue("")
		}
		return strValue(a.Consumes.Event.DetailType)
	}, anyChange("")},
	{"emits", func(a *ir.Agent) value {
		var l []string
		for _, e := range a.Emits {
			l = append(l, e.DetailType)
		}
		return listValue(l)
	}, nil},
	{"lambda.timeout", func(a *ir.Agent) value {
		if a.Lambda == nil {
			return durValue(0)
		}
		return durValue(a.Lambda.Timeout)
	}, nil},
	{"agentcore.session", func(a *ir.Agent) value {
		if a.AgentCore == nil {
			return durValue(0)
		}
		return durValue(a.AgentCore.Session)
	}, nil},
	{"tool.async", func(a *ir.Agent) value { return boolValue(a.Tool != nil && a.Tool.Async) }, nil},
}

var modelSettings = []setting[*ir.Model]{
	{"targets", func(m *ir.Model) value { return listValue(m.Targets) }, nil},
	{"fallbacks", func(m *ir.Model) value {
		l := []string{}
		for _, fb := range m.Fallbacks {
			l = append(l, fb.Name)
		}
		return listValue(l)
	}, falls("overflow from this policy has fewer places to go")},
	{"retries", func(m *ir.Model) value { return intValue(m.Retries) }, rises("retries multiply across layers; keep one retry layer")},
	{"sdk_retries", func(m *ir.Model) value { return intValue(m.SDKRetries) }, rises("retries multiply across layers; keep one retry layer")},
	{"timeout", func(m *ir.Model) value { return durValue(m.Timeout) }, nil},
	{"allowed_fails", func(m *ir.Model) value { return intValue(m.AllowedFails) }, nil},
	{"cooldown", func(m *ir.Model) value { return durValue(m.Cooldown) }, nil},
	{"max_in_flight", func(m *ir.Model) value { return intValue(m.MaxInFlight) },
		func(o, n value) (bool, string) {
			return n.n == 0 || n.n > o.n, "a larger burst of model calls can reach the provider (and its fallbacks)"
		}},
	{"tokens_per_minute", func(m *ir.Model) value { return intValue(m.TokensPerMinute) }, nil},
}

var stepSettings = []setting[*ir.Step]{
	{"agent", func(st *ir.Step) value {
		if st.Agent == nil {
			return strValue("")
		}
		return strValue(st.Agent.Name)
	}, nil},
	{"timeout", func(st *ir.Step) value { return durValue(st.Timeout) }, nil},
	{"heartbeat", func(st *ir.Step) value { return durValue(st.Heartbeat) },
		toZero("a task without a heartbeat is noticed dead only at its timeout")},
	{"retries", func(st *ir.Step) value { return intValue(st.Retries) }, nil},
	{"fan_out", func(st *ir.Step) value {
		fo := st.FanOut
		if fo == nil {
			return strValue("")
		}
		return strValue(fmt.Sprintf("items %s, max_concurrency %d, tolerated_failure_percent %v, %s children",
			fo.Items, fo.MaxConcurrency, fo.ToleratedFailurePercent, fo.ExecutionType))
	}, nil},
}

// stepGone is the rule of a whole workflow step: removing one strands executions in flight.
func stepGone(_, n value) (bool, string) {
	return n.gone, "a workflow step is gone: executions in flight that reach it fail"
}

func workflowEntries(w *ir.Workflow) []entry {
	out := []entry{{name: "type", v: strValue(w.Type), worse: anyChange("")}}
	steps := slices.Clone(w.Steps)
	slices.SortFunc(steps, func(a, b *ir.Step) int { return strings.Compare(a.Name, b.Name) })
	var order []string
	for _, st := range w.Steps {
		order = append(order, st.Name)
	}
	for _, st := range steps {
		agent := ""
		if st.Agent != nil {
			agent = st.Agent.Name
		}
		out = append(out, entry{name: "steps." + st.Name, v: value{n: 1, text: "a step on " + agent}, worse: stepGone, group: true})
		out = append(out, read(stepSettings, st, "steps."+st.Name+".")...)
	}
	return append(out, entry{name: "step order", v: listValue(order)})
}

var busSettings = []setting[*ir.Fleet]{
	{"bus.model", func(f *ir.Fleet) value { return strValue(f.Bus.Model) }, anyChange("")},
	{"bus.archive", func(f *ir.Fleet) value { return boolValue(f.Bus.Archive != nil) },
		toZero("no archive: events can no longer be replayed")},
	{"bus.archive.retention", func(f *ir.Fleet) value {
		if f.Bus.Archive == nil {
			return durValue(0)
		}
		return durValue(f.Bus.Archive.Retention)
	}, func(o, n value) (bool, string) { return n.n < o.n && n.n != 0, "replay history is kept for less time" }},
}

// fieldChange is one changed setting.
type fieldChange struct {
	Field    string // spec-shaped: "delivery.attempts", "steps.Code.timeout"
	Old, New value
	worse    rule
}

// diffEntries lists the settings that differ, in the head's order with what only the base
// has (a removed step) after it. A step there on one side only is one change; its own
// settings are not listed.
func diffEntries(base, head []entry) []fieldChange {
	bm, hm := map[string]entry{}, map[string]entry{}
	for _, e := range base {
		bm[e.name] = e
	}
	for _, e := range head {
		hm[e.name] = e
	}
	inGroupOfOneSide := func(name string) bool {
		for g := name; ; {
			i := strings.LastIndexByte(g, '.')
			if i < 0 {
				return false
			}
			g = g[:i]
			if b, ok := bm[g]; ok && b.group {
				_, inHead := hm[g]
				return !inHead
			}
			if h, ok := hm[g]; ok && h.group {
				_, inBase := bm[g]
				return !inBase
			}
		}
	}
	var out []fieldChange
	for _, h := range head {
		b, ok := bm[h.name]
		switch {
		case inGroupOfOneSide(h.name):
		case !ok:
			out = append(out, fieldChange{Field: h.name, Old: absent, New: h.v, worse: h.worse})
		case b.v != h.v && !h.group:
			out = append(out, fieldChange{Field: h.name, Old: b.v, New: h.v, worse: h.worse})
		}
	}
	for _, b := range base {
		if _, ok := hm[b.name]; !ok && !inGroupOfOneSide(b.name) {
			out = append(out, fieldChange{Field: b.name, Old: b.v, New: absent, worse: b.worse})
		}
	}
	return out
}

// specDuration writes a duration as the largest whole unit fleet.yaml accepts (90s, 15m, 4h, 14d).
func specDuration(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d%u.unit == 0 {
			return fmt.Sprintf("%d%s", d/u.unit, u.name)
		}
	}
	return d.String()
}

// part is one named piece of a fleet (a class, policy or workflow) as posture compares it.
type part struct {
	path     string
	settings []entry
}

// postureKinds are the pieces compared by name: each kind, its graph node, and its views.
var postureKinds = []struct {
	kind  string
	node  graph.Kind
	parts func(*ir.Fleet) map[string]part
}{
	{"class", graph.Class, func(f *ir.Fleet) map[string]part {
		m := map[string]part{}
		for _, a := range f.Agents {
			m[a.Name] = part{a.Path, read(classSettings, a, "")}
		}
		return m
	}},
	{"policy", graph.Model, func(f *ir.Fleet) map[string]part {
		m := map[string]part{}
		for _, x := range f.Models {
			m[x.Name] = part{x.Path, read(modelSettings, x, "")}
		}
		return m
	}},
	{"workflow", graph.Workflow, func(f *ir.Fleet) map[string]part {
		m := map[string]part{}
		for _, w := range f.Workflows {
			m[w.Name] = part{w.Path, workflowEntries(w)}
		}
		return m
	}},
}

// postureChanges compares the failure posture of every class, policy, workflow and the bus.
func postureChanges(base, head *ir.Fleet) []Change {
	var out []Change
	at := func(c Change, fl *ir.Fleet, path string) Change {
		if fl.Index != nil && path != "" {
			c.Position = fl.Index.Subject(path)
		}
		return c
	}
	changed := func(subject, path string, nodes []string, fc fieldChange) Change {
		sev, why := judge(subject, fc)
		return at(Change{Category: Posture, Severity: sev, Subject: subject, Side: compat.Head, nodes: nodes,
			Summary: fmt.Sprintf("%s: %s → %s", fc.Field, fc.Old.text, fc.New.text), Detail: why}, head, path)
	}
	for _, k := range postureKinds {
		bp, hp := k.parts(base), k.parts(head)
		for _, name := range slices.Sorted(maps.Keys(hp)) {
			h, nodes := hp[name], []string{graph.NodeKey(k.node, name)}
			b, ok := bp[name]
			if !ok {
				out = append(out, at(Change{Category: Posture, Severity: Info, Subject: k.kind + " " + name, Side: compat.Head,
					nodes: nodes, Summary: fmt.Sprintf("%s %s added", k.kind, name)}, head, h.path))
				continue
			}
			for _, fc := range diffEntries(b.settings, h.settings) {
				out = append(out, changed(k.kind+" "+name, h.path, nodes, fc))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(bp)) {
			if _, ok := hp[name]; !ok {
				out = append(out, at(Change{Category: Posture, Severity: Info, Subject: k.kind + " " + name, Side: compat.Base,
					nodes: []string{graph.NodeKey(k.node, name)}, Summary: fmt.Sprintf("%s %s removed", k.kind, name)}, base, bp[name].path))
			}
		}
	}
	for _, fc := range diffEntries(read(busSettings, base, ""), read(busSettings, head, "")) {
		out = append(out, changed("bus", "/bus", nil, fc))
	}
	return out
}

// judge rates a posture change by its setting's rule: a warning when it weakens how the fleet
// fails (longer silent retries, shorter memory of finished work, lost fallbacks or caps),
// info otherwise.
func judge(_ string, fc fieldChange) (Severity, string) {
	if fc.worse == nil || fc.Old.gone {
		return Info, "" // a setting that appears is news, whatever its rule
	}
	if worse, why := fc.worse(fc.Old, fc.New); worse {
		return Warning, why
	}
	return Info, ""
}
