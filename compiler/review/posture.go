package review

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/ir"
)

// The posture views hold what decides how a fleet behaves under failure, as plain values:
// the IR itself links classes, events and workflows both ways, which is no shape to diff.
// Field names are the spec's, so a finding reads like the YAML the reviewer sees.

type classPosture struct {
	Runtime           string
	FIFO              bool          `review:"ordering.fifo"`
	GroupBy           string        `review:"ordering.group_by"`
	StepP95           time.Duration `review:"step.p95"`
	StepMax           time.Duration `review:"step.max"`
	Heartbeat         time.Duration `review:"step.heartbeat"`
	Deadline          time.Duration `review:"step.deadline"`
	Visibility        time.Duration `review:"queue.visibility"`
	Retention         time.Duration `review:"queue.retention"`
	MaxReceives       int           `review:"queue.max_receives"`
	DLQRetention      time.Duration `review:"queue.dlq_retention"`
	DeliveryAttempts  int           `review:"delivery.attempts"`
	DeliveryMaxAge    time.Duration `review:"delivery.max_age"`
	IdempotencyWindow time.Duration `review:"idempotency.window"`
	IdempotencyKey    []string      `review:"idempotency.key"`
	SideEffects       string        `review:"side_effects"`
	Model             string        `review:"model"`
	ScalingMin        int           `review:"scaling.min"`
	ScalingMax        int           `review:"scaling.max"`
	ScalingPerReplica int           `review:"scaling.per_replica"`
	ClaimCheckOver    int64         `review:"payload.claim_check_over"`
	MaxPayload        int64         `review:"payload.max"`
	Consumes          string        `review:"consumes.event"`
	Emits             []string      `review:"emits"`
	LambdaTimeout     time.Duration `review:"lambda.timeout"`
	AgentCoreSession  time.Duration `review:"agentcore.session"`
	ToolAsync         bool          `review:"tool.async"`
}

type modelPosture struct {
	Targets         []string      `review:"targets"`
	Fallbacks       []string      `review:"fallbacks"`
	Retries         int           `review:"retries"`
	SDKRetries      int           `review:"sdk_retries"`
	Timeout         time.Duration `review:"timeout"`
	AllowedFails    int           `review:"allowed_fails"`
	Cooldown        time.Duration `review:"cooldown"`
	MaxInFlight     int           `review:"max_in_flight"`
	TokensPerMinute int           `review:"tokens_per_minute"`
}

type stepPosture struct {
	Agent     string        `review:"agent"`
	Timeout   time.Duration `review:"timeout"`
	Heartbeat time.Duration `review:"heartbeat"`
	Retries   int           `review:"retries"`
	FanOut    string        `review:"fan_out"`
}

type workflowPosture struct {
	Type  string
	Steps map[string]stepPosture `review:"steps"`
	Order []string               `review:"step order"`
}

type busPosture struct {
	Model            string        `review:"bus.model"`
	Archive          bool          `review:"bus.archive"`
	ArchiveRetention time.Duration `review:"bus.archive.retention"`
}

func classView(a *ir.Agent) classPosture {
	p := classPosture{
		Runtime: a.Runtime, FIFO: a.FIFO, GroupBy: a.GroupBy, StepP95: a.StepP95, StepMax: a.StepMax,
		Heartbeat: a.Heartbeat, Deadline: a.Deadline, Visibility: a.Queue.Visibility, Retention: a.Queue.Retention,
		MaxReceives: a.Queue.MaxReceives, DLQRetention: a.DLQ.Retention, DeliveryAttempts: a.Delivery.Attempts,
		DeliveryMaxAge: a.Delivery.MaxAge, IdempotencyWindow: a.Idempotency.Window, IdempotencyKey: a.Idempotency.Key,
		SideEffects: a.SideEffects, ScalingMin: a.Scaling.Min, ScalingMax: a.Scaling.Max,
		ScalingPerReplica: a.Scaling.PerReplica, ClaimCheckOver: a.ClaimCheckOver, MaxPayload: a.MaxPayload,
	}
	if a.Model != nil {
		p.Model = a.Model.Name
	}
	if a.Consumes != nil {
		p.Consumes = a.Consumes.Event.DetailType
	}
	for _, e := range a.Emits {
		p.Emits = append(p.Emits, e.DetailType)
	}
	if a.Lambda != nil {
		p.LambdaTimeout = a.Lambda.Timeout
	}
	if a.AgentCore != nil {
		p.AgentCoreSession = a.AgentCore.Session
	}
	p.ToolAsync = a.Tool != nil && a.Tool.Async
	return p
}

func modelView(m *ir.Model) modelPosture {
	p := modelPosture{Targets: m.Targets, Retries: m.Retries, SDKRetries: m.SDKRetries, Timeout: m.Timeout,
		AllowedFails: m.AllowedFails, Cooldown: m.Cooldown, MaxInFlight: m.MaxInFlight, TokensPerMinute: m.TokensPerMinute}
	for _, fb := range m.Fallbacks {
		p.Fallbacks = append(p.Fallbacks, fb.Name)
	}
	return p
}

func workflowView(w *ir.Workflow) workflowPosture {
	p := workflowPosture{Type: w.Type, Steps: map[string]stepPosture{}}
	for _, st := range w.Steps {
		sp := stepPosture{Timeout: st.Timeout, Heartbeat: st.Heartbeat, Retries: st.Retries}
		if st.Agent != nil {
			sp.Agent = st.Agent.Name
		}
		if fo := st.FanOut; fo != nil {
			sp.FanOut = fmt.Sprintf("items %s, max_concurrency %d, tolerated_failure_percent %v, %s children",
				fo.Items, fo.MaxConcurrency, fo.ToleratedFailurePercent, fo.ExecutionType)
		}
		p.Steps[st.Name] = sp
		p.Order = append(p.Order, st.Name)
	}
	return p
}

func busView(f *ir.Fleet) busPosture {
	p := busPosture{Model: f.Bus.Model, Archive: f.Bus.Archive != nil}
	if f.Bus.Archive != nil {
		p.ArchiveRetention = f.Bus.Archive.Retention
	}
	return p
}

// fieldChange is one changed setting.
type fieldChange struct {
	Field    string // spec-shaped: "delivery.attempts", "steps.Code.timeout"
	Old, New reflect.Value
}

// diffReporter collects, from one cmp.Equal run, the settings that differ. A changed list
// is one setting (reported whole), so paths stop at the first slice index.
type diffReporter struct {
	path    cmp.Path
	seen    map[string]bool
	changes []fieldChange
}

func (r *diffReporter) PushStep(ps cmp.PathStep) { r.path = append(r.path, ps) }
func (r *diffReporter) PopStep()                 { r.path = r.path[:len(r.path)-1] }
func (r *diffReporter) Report(rs cmp.Result) {
	if rs.Equal() {
		return
	}
	var names []string
	last := 0
	for i := 1; i < len(r.path); i++ {
		switch s := r.path[i].(type) {
		case cmp.StructField:
			names = append(names, tagName(r.path[i-1].Type(), s.Name()))
		case cmp.MapIndex:
			names = append(names, fmt.Sprint(s.Key()))
		default:
			i = len(r.path) // a slice element: the list changed
			continue
		}
		last = i
	}
	name := strings.Join(names, ".")
	if r.seen[name] {
		return
	}
	r.seen[name] = true
	vx, vy := r.path[last].Values()
	r.changes = append(r.changes, fieldChange{Field: name, Old: vx, New: vy})
}

// tagName is the spec name a posture field carries in its review tag.
func tagName(t reflect.Type, field string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if f, ok := t.FieldByName(field); ok {
		if tag := f.Tag.Get("review"); tag != "" {
			return tag
		}
	}
	return strings.ToLower(field)
}

// diffViews lists the settings that differ between two posture views.
func diffViews(x, y any) []fieldChange {
	r := &diffReporter{seen: map[string]bool{}}
	cmp.Equal(x, y, cmp.Reporter(r))
	return r.changes
}

// show renders a setting's value the way fleet.yaml writes it.
func show(v reflect.Value) string {
	if !v.IsValid() {
		return "(none)"
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		if x == 0 {
			return "0 (none)"
		}
		return specDuration(x)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case stepPosture:
		return "a step on " + x.Agent
	case string:
		if x == "" {
			return "(none)"
		}
	}
	return fmt.Sprint(v.Interface())
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
	path string
	view any
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
			m[a.Name] = part{a.Path, classView(a)}
		}
		return m
	}},
	{"policy", graph.Model, func(f *ir.Fleet) map[string]part {
		m := map[string]part{}
		for _, x := range f.Models {
			m[x.Name] = part{x.Path, modelView(x)}
		}
		return m
	}},
	{"workflow", graph.Workflow, func(f *ir.Fleet) map[string]part {
		m := map[string]part{}
		for _, w := range f.Workflows {
			m[w.Name] = part{w.Path, workflowView(w)}
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
		return at(Change{Category: Posture, Severity: sev, Subject: subject, Side: "head", nodes: nodes,
			Summary: fmt.Sprintf("%s: %s → %s", fc.Field, show(fc.Old), show(fc.New)), Detail: why}, head, path)
	}
	for _, k := range postureKinds {
		bp, hp := k.parts(base), k.parts(head)
		for _, name := range slices.Sorted(maps.Keys(hp)) {
			h, nodes := hp[name], []string{graph.NodeKey(k.node, name)}
			b, ok := bp[name]
			if !ok {
				out = append(out, at(Change{Category: Posture, Severity: Info, Subject: k.kind + " " + name, Side: "head",
					nodes: nodes, Summary: fmt.Sprintf("%s %s added", k.kind, name)}, head, h.path))
				continue
			}
			for _, fc := range diffViews(b.view, h.view) {
				out = append(out, changed(k.kind+" "+name, h.path, nodes, fc))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(bp)) {
			if _, ok := hp[name]; !ok {
				out = append(out, at(Change{Category: Posture, Severity: Info, Subject: k.kind + " " + name, Side: "base",
					nodes: []string{graph.NodeKey(k.node, name)}, Summary: fmt.Sprintf("%s %s removed", k.kind, name)}, base, bp[name].path))
			}
		}
	}
	for _, fc := range diffViews(busView(base), busView(head)) {
		out = append(out, changed("bus", "/bus", nil, fc))
	}
	return out
}

// judge rates a posture change: a warning when it weakens how the fleet fails (longer
// silent retries, shorter memory of finished work, lost fallbacks or caps), info otherwise.
func judge(subject string, fc fieldChange) (Severity, string) {
	o, n := fc.Old, fc.New
	if !o.IsValid() || !n.IsValid() {
		if strings.HasPrefix(fc.Field, "steps.") && !n.IsValid() {
			return Warning, "a workflow step is gone: executions in flight that reach it fail"
		}
		return Info, ""
	}
	less := func() bool { return num(n) < num(o) }
	more := func() bool { return num(n) > num(o) }
	switch fc.Field {
	case "delivery.attempts":
		if more() {
			return Warning, "EventBridge retries a failing target longer before the DLQ sees it: an outage stays silent longer"
		}
	case "delivery.max_age":
		if more() {
			return Warning, "events of an unreachable target are retried silently for up to " + show(n) + " (seed: bound it, not the classic 24 h)"
		}
	case "queue.max_receives":
		if more() {
			return Warning, "a poison message is received more often before it reaches the DLQ"
		}
	case "queue.visibility":
		if less() {
			return Warning, "a step that outlives the visibility timeout reappears and runs twice"
		}
	case "queue.retention", "queue.dlq_retention":
		if less() {
			return Warning, "messages (or dead letters awaiting triage) expire sooner"
		}
	case "step.heartbeat":
		if num(n) == 0 {
			return Warning, "no heartbeat: a long step is visible again mid-run"
		}
	case "idempotency.window":
		if less() {
			return Warning, "a duplicate arriving after " + show(n) + " runs the work again"
		}
	case "idempotency.key":
		return Warning, "work keys change: a redelivery of work done under the old key runs again"
	case "side_effects", "ordering.fifo", "ordering.group_by", "consumes.event", "bus.model":
		return Warning, ""
	case "bus.archive":
		if !n.Bool() {
			return Warning, "no archive: events can no longer be replayed"
		}
	case "bus.archive.retention":
		if less() && num(n) != 0 {
			return Warning, "replay history is kept for less time"
		}
	case "fallbacks":
		if n.Len() < o.Len() {
			return Warning, "overflow from this policy has fewer places to go"
		}
	case "max_in_flight":
		if num(n) == 0 || more() {
			return Warning, "a larger burst of model calls can reach the provider (and its fallbacks)"
		}
	case "retries", "sdk_retries":
		if more() {
			return Warning, "retries multiply across layers; keep one retry layer"
		}
	case "type":
		return Warning, ""
	}
	if strings.HasSuffix(fc.Field, ".heartbeat") && num(n) == 0 {
		return Warning, "a task without a heartbeat is noticed dead only at its timeout"
	}
	return Info, ""
}

// num reads an integer-like setting (durations, counts) for comparison.
func num(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return v.Int()
	case reflect.Bool:
		if v.Bool() {
			return 1
		}
	}
	return 0
}
