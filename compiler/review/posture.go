package review

import (
	"fmt"
	"reflect"
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

// postureChanges compares the failure posture of every class, policy, workflow and the bus.
func postureChanges(base, head *ir.Fleet) []Change {
	var out []Change
	add := func(subject, path string, fl *ir.Fleet, isHead bool, nodes []string, fc fieldChange) {
		sev, why := judge(subject, fc)
		c := Change{Category: Posture, Severity: sev, Subject: subject, Side: sideName(isHead), nodes: nodes,
			Summary: fmt.Sprintf("%s: %s → %s", fc.Field, show(fc.Old), show(fc.New)), Detail: why}
		if fl.Index != nil && path != "" {
			c.Position = fl.Index.Subject(path)
		}
		out = append(out, c)
	}
	presence := func(kind, name, path string, isHead bool, fl *ir.Fleet, nodes []string) {
		verb := "removed"
		if isHead {
			verb = "added"
		}
		c := Change{Category: Posture, Severity: Info, Subject: kind + " " + name, Side: sideName(isHead), nodes: nodes,
			Summary: fmt.Sprintf("%s %s %s", kind, name, verb)}
		if fl.Index != nil {
			c.Position = fl.Index.Subject(path)
		}
		out = append(out, c)
	}

	for _, h := range head.Agents {
		nodes := []string{graph.NodeKey(graph.Class, h.Name)}
		b := base.Agent(h.Name)
		if b == nil {
			presence("class", h.Name, h.Path, true, head, nodes)
			continue
		}
		for _, fc := range diffViews(classView(b), classView(h)) {
			add("class "+h.Name, h.Path, head, true, nodes, fc)
		}
	}
	for _, b := range base.Agents {
		if head.Agent(b.Name) == nil {
			presence("class", b.Name, b.Path, false, base, []string{graph.NodeKey(graph.Class, b.Name)})
		}
	}

	bm, hm := models(base), models(head)
	for _, h := range head.Models {
		nodes := []string{graph.NodeKey(graph.Model, h.Name)}
		b, ok := bm[h.Name]
		if !ok {
			presence("policy", h.Name, h.Path, true, head, nodes)
			continue
		}
		for _, fc := range diffViews(modelView(b), modelView(h)) {
			add("policy "+h.Name, h.Path, head, true, nodes, fc)
		}
	}
	for _, b := range base.Models {
		if _, ok := hm[b.Name]; !ok {
			presence("policy", b.Name, b.Path, false, base, []string{graph.NodeKey(graph.Model, b.Name)})
		}
	}

	bw, hw := workflows(base), workflows(head)
	for _, h := range head.Workflows {
		nodes := []string{graph.NodeKey(graph.Workflow, h.Name)}
		b, ok := bw[h.Name]
		if !ok {
			presence("workflow", h.Name, h.Path, true, head, nodes)
			continue
		}
		for _, fc := range diffViews(workflowView(b), workflowView(h)) {
			add("workflow "+h.Name, h.Path, head, true, nodes, fc)
		}
	}
	for _, b := range base.Workflows {
		if _, ok := hw[b.Name]; !ok {
			presence("workflow", b.Name, b.Path, false, base, []string{graph.NodeKey(graph.Workflow, b.Name)})
		}
	}

	for _, fc := range diffViews(busView(base), busView(head)) {
		add("bus", "/bus", head, true, nil, fc)
	}
	return out
}

func models(f *ir.Fleet) map[string]*ir.Model {
	m := map[string]*ir.Model{}
	for _, x := range f.Models {
		m[x.Name] = x
	}
	return m
}

func workflows(f *ir.Fleet) map[string]*ir.Workflow {
	m := map[string]*ir.Workflow{}
	for _, x := range f.Workflows {
		m[x.Name] = x
	}
	return m
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
