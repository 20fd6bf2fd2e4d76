package ir

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Defaults that the spec may override. The numbers come from the seeds: four strikes to
// the DLQ, a DLQ that outlives its source, bounded EventBridge retries (24 attempts / 1 h)
// rather than the classic 185 / 24 h, long polling always on.
const (
	DefaultRetention    = 4 * 24 * time.Hour
	DefaultDLQRetention = 14 * 24 * time.Hour
	DefaultLongPoll     = 20 * time.Second
	DefaultMaxReceives  = 3
	DefaultAttempts     = 24
	DefaultMaxAge       = time.Hour
	DefaultClaimCheck   = 200 * 1024
	DefaultNamespace    = "agents"
	DefaultImage        = "ghcr.io/fleetc/fleet-worker:latest"
	// LambdaMaxTimeout is Lambda's hard stop.
	LambdaMaxTimeout = 15 * time.Minute
	// MaxVisibility is SQS's visibility ceiling.
	MaxVisibility = 12 * time.Hour
)

// Lower resolves a loaded spec into the IR. Undefined references and names AWS would
// refuse are reported here, each with the spec path of the offending value.
func Lower(file *spec.File) (*Fleet, diag.Diagnostics) {
	l := &lowerer{src: file.Fleet, ds: nil}
	f := l.lower()
	f.Index = file.Index
	file.Index.Locate(l.ds)
	return f, l.ds.Sorted()
}

type lowerer struct {
	src *spec.Fleet
	ds  diag.Diagnostics
	f   *Fleet
}

func (l *lowerer) lower() *Fleet {
	s := l.src
	f := &Fleet{Name: s.Fleet, Region: s.Region}
	l.f = f
	for _, k := range slices.Sorted(maps.Keys(s.Tags)) {
		f.Tags = append(f.Tags, Tag{k, s.Tags[k]})
	}
	f.Bus = Bus{Name: s.Bus.Name, Model: "classic", RequestedModel: or(s.Bus.Model, "classic"), MaxEntries: ClassicBusMaxEntries, Path: "/bus"}
	if s.Bus.Archive != nil {
		f.Bus.Archive = &Archive{Name: f.Name + "-archive", Retention: dur(s.Bus.Archive.Retention, 0), Path: "/bus/archive"}
	}
	f.Worker = Worker{Image: DefaultImage, Namespace: DefaultNamespace}
	if s.Worker != nil {
		f.Worker.Image = or(s.Worker.Image, f.Worker.Image)
		f.Worker.Namespace = or(s.Worker.Namespace, f.Worker.Namespace)
	}
	f.State = State{
		IdempotencyTable: f.Name + "-idempotency",
		ClaimCheckBucket: f.Name + "-claimcheck-" + f.Region,
		ClaimCheckExpiry: 14 * 24 * time.Hour,
	}
	if st := s.State; st != nil {
		f.State.IdempotencyTable = or(st.IdempotencyTable, f.State.IdempotencyTable)
		f.State.ClaimCheckBucket = or(st.ClaimCheckBucket, f.State.ClaimCheckBucket)
		f.State.ClaimCheckExpiry = dur(st.ClaimCheckExpiry, f.State.ClaimCheckExpiry)
	}
	f.TargetDLQ = Queue{Name: f.Name + "-delivery-dlq", Retention: DefaultDLQRetention, Visibility: 30 * time.Second, Path: "/bus"}
	f.SchemaRegistry = f.Name + "-events"

	for _, name := range slices.Sorted(maps.Keys(s.Events)) {
		e := s.Events[name]
		f.Events = append(f.Events, &Event{
			DetailType: name, Version: e.Version, Source: e.Source, Description: e.Description,
			Detail: e.Detail, SchemaName: e.Source + "@" + name, Path: spec.Pointer("events", name),
		})
	}
	l.lowerModels()
	for _, name := range slices.Sorted(maps.Keys(s.Agents)) {
		f.Agents = append(f.Agents, l.lowerAgent(name, s.Agents[name]))
	}
	for _, name := range slices.Sorted(maps.Keys(s.Workflows)) {
		f.Workflows = append(f.Workflows, l.lowerWorkflow(name, s.Workflows[name]))
	}
	for _, a := range f.Agents {
		if a.Tool != nil && a.Tool.Async {
			f.State.JobsTable = f.Name + "-jobs"
			if s.State != nil && s.State.JobsTable != "" {
				f.State.JobsTable = s.State.JobsTable
			}
		}
	}
	if t := s.Traffic; t != nil {
		f.Traffic = &Traffic{
			ConversationsPerMinute: t.ConversationsPerMinute, StepsPerConversation: t.StepsPerConversation,
			StepDuration: dur(t.StepDuration, 0), Path: "/traffic",
		}
		if t.ConcurrentConversations != nil {
			f.Traffic.ConcurrentConversations = *t.ConcurrentConversations
		}
	}
	l.checkNames()
	l.checkStateNames()
	return f
}

func (l *lowerer) lowerModels() {
	f, s := l.f, l.src
	byName := map[string]*Model{}
	for _, name := range slices.Sorted(maps.Keys(s.Models)) {
		m := s.Models[name]
		im := &Model{
			Name: name, Targets: m.Targets, Path: spec.Pointer("models", name),
			Retries: intOr(m.Retries, 2), SDKRetries: intOr(m.SDKRetries, 0),
			Timeout: dur(m.Timeout, 120*time.Second), AllowedFails: intOr(m.AllowedFails, 2),
			Cooldown: dur(m.Cooldown, 60*time.Second), MaxInFlight: intOr(m.MaxInFlight, 0),
			TokensPerMinute: intOr(m.TokensPerMinute, 0),
		}
		f.Models = append(f.Models, im)
		byName[name] = im
	}
	for _, im := range f.Models {
		for i, fb := range s.Models[im.Name].Fallbacks {
			target, ok := byName[fb]
			if !ok {
				l.undefined(spec.Pointer("models", im.Name, "fallbacks", fmt.Sprint(i)), "model policy", fb, slices.Sorted(maps.Keys(s.Models)))
				continue
			}
			im.Fallbacks = append(im.Fallbacks, target)
		}
	}
}

func (l *lowerer) undefined(path, kind, name string, known []string) {
	d := l.ds.Errorf("P005", path, "undefined %s %q", kind, name)
	if sug := spec.Suggest(name, known); sug != "" {
		d.Summary += fmt.Sprintf("; did you mean %q?", sug)
	}
	if len(known) == 0 {
		d.Detail = fmt.Sprintf("No %s is defined in this spec.", kind)
	} else {
		d.Detail = fmt.Sprintf("Defined: %s.", strings.Join(known, ", "))
	}
}

func (l *lowerer) model(name string) *Model {
	for _, m := range l.f.Models {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func (l *lowerer) lowerAgent(name string, sa *spec.Agent) *Agent {
	f, s := l.f, l.src
	p := spec.Pointer("agents", name)
	a := &Agent{
		Name: name, Description: sa.Description, Path: p, Runtime: sa.Runtime,
		StepP95: sa.Step.P95.Duration, StepMax: sa.Step.Max.Duration,
		SideEffects:    or(sa.SideEffects, "idempotent"),
		RoleName:       f.Name + "-" + name + "-worker",
		Image:          or(sa.Image, f.Worker.Image),
		ConfigPath:     "runtime/" + name + ".json",
		ClaimCheckOver: DefaultClaimCheck,
		Deadline:       dur(sa.Step.Deadline, 0),
	}
	if sa.Payload != nil {
		if sa.Payload.ClaimCheckOver != nil {
			a.ClaimCheckOver = int64(*sa.Payload.ClaimCheckOver)
		}
		if sa.Payload.Max != nil {
			a.MaxPayload = int64(*sa.Payload.Max)
		}
	}
	if o := sa.Ordering; o != nil && o.FIFO {
		a.FIFO, a.GroupBy, a.HighThroughput = true, o.GroupBy, o.HighThroughput
	}
	switch {
	case len(sa.Handler.Exec) > 0:
		a.Handler = Handler{Kind: "exec", Command: sa.Handler.Exec}
	case sa.Handler.HTTP != "":
		a.Handler = Handler{Kind: "http", URL: sa.Handler.HTTP}
	case sa.Handler.LLM != nil:
		a.Handler = Handler{Kind: "llm", System: sa.Handler.LLM.System, Tools: sa.Handler.LLM.Tools, MaxTokens: sa.Handler.LLM.MaxTokens}
	}
	if sa.Model != "" {
		if a.Model = l.model(sa.Model); a.Model == nil {
			l.undefined(p+"/model", "model policy", sa.Model, slices.Sorted(maps.Keys(s.Models)))
		}
	}
	if sa.Tool != nil {
		a.Tool = &Tool{Async: sa.Tool.Async, StatusPollAfter: dur(sa.Tool.StatusPollAfter, 15*time.Second)}
	}

	// Queue settings: class over defaults over built-ins.
	var dq, cq spec.Queue
	if s.Defaults != nil && s.Defaults.Queue != nil {
		dq = *s.Defaults.Queue
	}
	if sa.Queue != nil {
		cq = *sa.Queue
	}
	qpath := func(field string, set bool) string {
		if set {
			return p + "/queue/" + field
		}
		return "/defaults/queue/" + field
	}
	suffix := ""
	if a.FIFO {
		suffix = ".fifo"
	}
	a.Queue = Queue{
		Name: f.Name + "-" + name + suffix, FIFO: a.FIFO,
		Retention:   durPick(cq.Retention, dq.Retention, DefaultRetention),
		LongPoll:    durPick(cq.LongPoll, dq.LongPoll, DefaultLongPoll),
		Delay:       durPick(cq.Delay, dq.Delay, 0),
		MaxReceives: intPick(cq.MaxReceives, dq.MaxReceives, DefaultMaxReceives),
		Path:        qpath("visibility", cq.Visibility != nil),
	}
	a.DLQ = Queue{
		Name: f.Name + "-" + name + "-dlq" + suffix, FIFO: a.FIFO,
		Retention:  durPick(cq.DLQRetention, dq.DLQRetention, DefaultDLQRetention),
		Visibility: 5 * time.Minute,
		Path:       qpath("dlq_retention", cq.DLQRetention != nil),
	}

	switch a.Runtime {
	case "lambda":
		timeout := roundUpSecond(a.StepMax)
		if timeout > LambdaMaxTimeout {
			timeout = LambdaMaxTimeout // W001 reports the overrun
		}
		a.Lambda = &Lambda{FunctionName: f.Name + "-" + name, Timeout: timeout, BatchSize: 1, Memory: 1024, Path: p + "/lambda"}
		if lc := sa.Lambda; lc != nil {
			a.Lambda.BatchSize = intOr(lc.BatchSize, 1)
			a.Lambda.BatchingWindow = dur(lc.BatchingWindow, 0)
			a.Lambda.Memory = intOr(lc.Memory, 1024)
		}
		if a.FIFO && a.Lambda.BatchSize > 1 {
			// One FIFO group's records run in order inside one invocation.
			a.Lambda.Timeout = minDur(roundUpSecond(time.Duration(a.Lambda.BatchSize)*a.StepMax), LambdaMaxTimeout)
		}
		// AWS guidance for SQS event sources: visibility at least six times the function
		// timeout, plus the batching window the records may wait in.
		a.Queue.Visibility = durPick(cq.Visibility, dq.Visibility, minDur(6*a.Lambda.Timeout+a.Lambda.BatchingWindow, MaxVisibility))
	default:
		a.Queue.Visibility = durPick(cq.Visibility, dq.Visibility, minDur(roundUpSecond(a.StepMax*3/2), MaxVisibility))
		a.Heartbeat = dur(sa.Step.Heartbeat, roundUpSecond(a.Queue.Visibility/3))
	}
	if a.Runtime == "lambda" && sa.Step.Heartbeat != nil {
		a.Heartbeat = sa.Step.Heartbeat.Duration
	}
	if a.Runtime == "eks" {
		a.K8s = &K8s{Namespace: f.Worker.Namespace, Deployment: name + "-worker", ServiceAccount: name + "-worker"}
	}
	if a.Runtime == "agentcore" {
		a.AgentCore = &AgentCore{RuntimeName: strings.ReplaceAll(f.Name+"_"+name, "-", "_"), Session: 8 * time.Hour, Path: p + "/agentcore"}
		if ac := sa.AgentCore; ac != nil {
			a.AgentCore.Session = dur(ac.Session, a.AgentCore.Session)
			a.AgentCore.Instances = ac.Instances
		}
	}

	// Scaling.
	a.Scaling = Scaling{Min: 1, Max: 10, PerReplica: 4, Cooldown: 300 * time.Second, ScaleOnInFlight: true, Path: p + "/scaling"}
	if sc := sa.Scaling; sc != nil {
		a.Scaling.Min, a.Scaling.Max = sc.Min, sc.Max
		a.Scaling.PerReplica = orInt(sc.PerReplica, a.Scaling.PerReplica)
		a.Scaling.Cooldown = dur(sc.Cooldown, a.Scaling.Cooldown)
		a.Scaling.Activation = intOr(sc.Activation, 0)
		if sc.InFlight != nil {
			a.Scaling.ScaleOnInFlight = *sc.InFlight
		}
	}

	// Delivery (EventBridge retry policy).
	var dd, cd spec.Delivery
	if s.Defaults != nil && s.Defaults.Delivery != nil {
		dd = *s.Defaults.Delivery
	}
	if sa.Delivery != nil {
		cd = *sa.Delivery
	}
	a.Delivery = Delivery{
		Attempts:       intPick(cd.Attempts, dd.Attempts, DefaultAttempts),
		MaxAge:         durPick(cd.MaxAge, dd.MaxAge, DefaultMaxAge),
		MaxAgeExplicit: cd.MaxAge != nil || dd.MaxAge != nil,
		Path:           "/defaults/delivery",
	}
	if sa.Delivery != nil {
		a.Delivery.Path = p + "/delivery"
	}

	// Idempotency: the window must outlive every retry that can still reference the key.
	var di, ci spec.Idempotency
	if s.Defaults != nil && s.Defaults.Idempotency != nil {
		di = *s.Defaults.Idempotency
	}
	if sa.Idempotency != nil {
		ci = *sa.Idempotency
	}
	a.Idempotency = Idempotency{
		Window: durPick(ci.Window, di.Window, a.Delivery.MaxAge+a.Queue.Retention),
		Key:    ci.Key,
		Path:   "/defaults/idempotency",
	}
	if a.Idempotency.Key == nil {
		a.Idempotency.Key = di.Key
	}
	if sa.Idempotency != nil {
		a.Idempotency.Path = p + "/idempotency"
	}

	// Event wiring.
	if c := sa.Consumes; c != nil {
		ev := f.Event(c.Event)
		if ev == nil {
			l.undefined(p+"/consumes/event", "event", c.Event, slices.Sorted(maps.Keys(s.Events)))
		} else {
			a.Consumes = &Consumes{Event: ev}
			ev.Consumers = append(ev.Consumers, a)
			for _, field := range slices.Sorted(maps.Keys(c.Match)) {
				a.Consumes.Match = append(a.Consumes.Match, Match{Field: field, Values: c.Match[field]})
			}
			a.Rule = &Rule{Name: f.Name + "-" + name, TargetID: name + "-queue", Pattern: pattern(ev, a.Consumes.Match)}
		}
	}
	for i, e := range sa.Emits {
		ev := f.Event(e)
		if ev == nil {
			l.undefined(fmt.Sprintf("%s/emits/%d", p, i), "event", e, slices.Sorted(maps.Keys(s.Events)))
			continue
		}
		a.Emits = append(a.Emits, ev)
		ev.Producers = append(ev.Producers, a)
	}
	return a
}

// pattern is the EventBridge event pattern of a consuming class.
func pattern(ev *Event, match []Match) map[string]any {
	p := map[string]any{"detail-type": []any{ev.DetailType}, "source": []any{ev.Source}}
	if len(match) > 0 {
		detail := map[string]any{}
		for _, m := range match {
			detail[m.Field] = m.Values
		}
		p["detail"] = detail
	}
	return p
}

func (l *lowerer) lowerWorkflow(name string, sw *spec.Workflow) *Workflow {
	f := l.f
	p := spec.Pointer("workflows", name)
	w := &Workflow{
		Name: name, Description: sw.Description, Path: p, Type: or(sw.Type, "standard"),
		StateMachineName: f.Name + "-" + name, RoleName: f.Name + "-" + name + "-sfn",
		LogGroup: "/aws/vendedlogs/states/" + f.Name + "-" + name,
	}
	seen := map[string]bool{}
	names := map[string]int{}
	for i, ss := range sw.Steps {
		sp := fmt.Sprintf("%s/steps/%d", p, i)
		st := &Step{Path: sp, Name: ss.Name}
		agentName, agentPath := ss.Agent, sp+"/agent"
		timeout, heartbeat := ss.Timeout, ss.Heartbeat
		switch {
		case ss.Agent != "" && ss.FanOut != nil:
			l.ds.Errorf("P008", sp, "a workflow step is either an agent step or a fan_out, not both")
			continue
		case ss.FanOut != nil:
			fo := ss.FanOut
			agentName, agentPath = fo.Agent, sp+"/fan_out/agent"
			timeout, heartbeat = fo.Timeout, fo.Heartbeat
			// 0 is Step Functions' "no limit" (10,000 child executions for a Distributed Map).
			st.FanOut = &FanOut{Items: fo.Items, MaxConcurrency: intOr(fo.MaxConcurrency, 40), ExecutionType: or(fo.ExecutionType, "STANDARD")}
			if fo.ToleratedFailurePercent != nil {
				st.FanOut.ToleratedFailurePercent = *fo.ToleratedFailurePercent
			}
			if fo.BatchInputBytes != nil {
				st.FanOut.BatchInputBytes = int64(*fo.BatchInputBytes)
			}
		case ss.Agent == "":
			l.ds.Errorf("P008", sp, "a workflow step needs an agent or a fan_out")
			continue
		}
		a := f.Agent(agentName)
		if a == nil {
			l.undefined(agentPath, "agent", agentName, slices.Sorted(maps.Keys(l.src.Agents)))
			continue
		}
		st.Agent = a
		if st.Name == "" {
			st.Name = stateName(a.Name, st.FanOut != nil)
		}
		if prev, dup := names[st.Name]; dup {
			d := l.ds.Errorf("P006", sp, "duplicate state name %q (also step %d)", st.Name, prev+1)
			d.Detail = "Give each step a distinct `name:`; state names must be unique in a state machine."
		}
		names[st.Name] = i
		st.Timeout = dur(timeout, defaultTaskTimeout(a))
		st.Heartbeat = dur(heartbeat, 0)
		st.Retries = intOr(ss.Retries, 0)
		w.Steps = append(w.Steps, st)
		if !seen[a.Name] {
			seen[a.Name] = true
			w.Agents = append(w.Agents, a)
			a.Workflows = append(a.Workflows, w)
		}
	}
	sort.Slice(w.Agents, func(i, j int) bool { return w.Agents[i].Name < w.Agents[j].Name })
	return w
}

// defaultTaskTimeout leaves room for the step to be redelivered once before the state gives up.
func defaultTaskTimeout(a *Agent) time.Duration {
	return roundUpSecond(2*a.StepMax + a.Queue.Visibility)
}

func stateName(agent string, fanOut bool) string {
	var b strings.Builder
	for _, part := range strings.Split(agent, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	if fanOut {
		b.WriteString("FanOut")
	}
	return b.String()
}

var (
	queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	bucketRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
)

// checkNames reports derived names that AWS would refuse, at the spec value they come from.
func (l *lowerer) checkNames() {
	f := l.f
	limit := func(path, kind, name string, max int) {
		if len(name) > max {
			d := l.ds.Errorf("P007", path, "%s name %q is %d characters; AWS allows %d", kind, name, len(name), max)
			d.Detail = "Generated names are <fleet>-<name>[-suffix]; shorten the fleet or the class/workflow name."
		}
	}
	for _, a := range f.Agents {
		for _, q := range []Queue{a.Queue, a.DLQ} {
			base := strings.TrimSuffix(q.Name, ".fifo")
			if len(q.Name) > 80 || !queueNameRE.MatchString(base) {
				d := l.ds.Errorf("P007", a.Path, "queue name %q is invalid: SQS allows 80 characters of [A-Za-z0-9_-], .fifo included", q.Name)
				d.Detail = "Shorten the fleet or agent name."
			}
		}
		if a.Rule != nil {
			limit(a.Path, "rule", a.Rule.Name, 64)
		}
		limit(a.Path, "IAM role", a.RoleName, 64)
		if a.Lambda != nil {
			limit(a.Path, "Lambda function", a.Lambda.FunctionName, 64)
		}
		if a.AgentCore != nil {
			limit(a.Path, "AgentCore runtime", a.AgentCore.RuntimeName, 48)
		}
		if a.K8s != nil {
			limit(a.Path, "Kubernetes object", a.K8s.Deployment, 63)
		}
	}
	for _, w := range f.Workflows {
		limit(w.Path, "state machine", w.StateMachineName, 80)
		limit(w.Path, "IAM role", w.RoleName, 64)
	}
	if f.Bus.Archive != nil {
		limit("/bus/archive", "archive", f.Bus.Archive.Name, 48)
	}
	if !bucketRE.MatchString(f.State.ClaimCheckBucket) {
		l.ds.Errorf("P007", "/fleet", "claim-check bucket name %q is invalid: S3 allows 3-63 characters of [a-z0-9.-]", f.State.ClaimCheckBucket)
	}
	limit("/fleet", "target DLQ", f.TargetDLQ.Name, 80)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func intPick(a, b *int, def int) int {
	if a != nil {
		return *a
	}
	return intOr(b, def)
}

func dur(d *spec.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

func durPick(a, b *spec.Duration, def time.Duration) time.Duration {
	if a != nil {
		return a.Duration
	}
	return dur(b, def)
}

func minDur(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

func roundUpSecond(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(d.Seconds())) * time.Second
}

// Seconds is d in whole seconds, rounded up: what AWS APIs take.
func Seconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }
