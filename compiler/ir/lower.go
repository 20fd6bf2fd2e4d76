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

	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Lower resolves a loaded spec into the IR. Undefined references and names AWS would
// refuse are reported here, each with the spec path of the offending value.
func Lower(file *spec.File) (*Fleet, diag.Diagnostics) {
	l := &lowerer{src: file.Fleet, removed: file.Removed, idx: file.Index, env: file.Env}
	f := l.lower()
	f.Index, f.Local = file.Index, file.Local
	file.Index.Locate(l.ds)
	return f, l.ds.Sorted()
}

type lowerer struct {
	src *spec.Fleet
	ds  diag.Diagnostics
	f   *Fleet
	// removed are the spec parts the loader left out for their input errors: a reference
	// to one is not undefined, only not checkable yet.
	removed map[string]bool
	idx     *spec.Index // nil for specs built in code
	env     string      // the environment lowered ("" for a spec without environments)
}

// collectionOf is the spec collection that defines a kind of reference.
var collectionOf = map[string]string{"event": "events", "model policy": "models", "agent": "agents"}

func (l *lowerer) lower() *Fleet {
	s := l.src
	f := &Fleet{Name: Qualified(s.Fleet, l.env), Env: l.env, Region: s.Region}
	l.f = f
	for _, k := range slices.Sorted(maps.Keys(s.Tags)) {
		f.Tags = append(f.Tags, Tag{k, s.Tags[k]})
	}
	f.Bus = Bus{Name: Qualified(s.Bus.Name, l.env), Model: "classic", RequestedModel: nonEmptyOr(s.Bus.Model, Defaults.BusModel), MaxEntries: ClassicBusMaxEntries, Path: "/bus"}
	if s.Bus.Archive != nil {
		f.Bus.Archive = &Archive{Name: f.Name + "-archive", Retention: durationOr(s.Bus.Archive.Retention, 0), Path: "/bus/archive"}
	}
	l.lowerAlarms()
	l.lowerWorker()
	l.lowerState()
	f.TargetDLQ = Queue{Name: f.Name + "-delivery-dlq", Retention: Defaults.DLQRetention, Visibility: 30 * time.Second, Path: "/bus"}
	f.SchemaRegistry = f.Name + "-events"
	l.lowerEvents()
	l.lowerModels()
	for _, name := range slices.Sorted(maps.Keys(s.Agents)) {
		f.Agents = append(f.Agents, l.lowerAgent(name, s.Agents[name]))
	}
	for _, name := range slices.Sorted(maps.Keys(s.Workflows)) {
		f.Workflows = append(f.Workflows, l.lowerWorkflow(name, s.Workflows[name]))
	}
	l.lowerSchedules()
	l.lowerAsyncTools()
	l.lowerTraffic()
	l.resolvePollers()
	l.checkNames()
	l.checkCollisions()
	countModelProcesses(f)
	l.checkStateNames()
	return f
}

// lowerWorker applies the worker image and namespace defaults; the namespace is per
// environment, like every name.
func (l *lowerer) lowerWorker() {
	s, f := l.src, l.f
	f.Worker = Worker{Image: Defaults.Image, Namespace: Defaults.Namespace}
	if s.Worker != nil {
		f.Worker.Image = nonEmptyOr(s.Worker.Image, f.Worker.Image)
		f.Worker.Namespace = nonEmptyOr(s.Worker.Namespace, f.Worker.Namespace)
	}
	f.Worker.Namespace = Qualified(f.Worker.Namespace, l.env)
	if s.Worker != nil {
		if e := s.Worker.EKS; e != nil {
			f.Worker.EKS = lowerEKS(f.Name, e)
		}
	}
}

// lowerState names the state plane (idempotency table, claim-check bucket) and its KMS key:
// the spec's names per environment, or names derived from the fleet's.
func (l *lowerer) lowerState() {
	s, f := l.src, l.f
	f.State = State{
		IdempotencyTable: f.Name + "-idempotency",
		ClaimCheckBucket: f.Name + "-claimcheck-" + f.Region,
		ClaimCheckExpiry: Defaults.ClaimCheckExpiry,
	}
	if st := s.State; st != nil {
		f.State.IdempotencyTable = nonEmptyOr(Qualified(st.IdempotencyTable, l.env), f.State.IdempotencyTable)
		f.State.ClaimCheckBucket = nonEmptyOr(Qualified(st.ClaimCheckBucket, l.env), f.State.ClaimCheckBucket)
		f.State.ClaimCheckExpiry = durationOr(st.ClaimCheckExpiry, f.State.ClaimCheckExpiry)
		if st.KMSKey == spec.KMSKeyCreate {
			f.State.CreateKMSKey = true
		} else {
			f.State.KMSKeyARN = st.KMSKey
		}
	}
}

// lowerEvents lists the event contracts in name order, each under its registry schema name.
func (l *lowerer) lowerEvents() {
	s, f := l.src, l.f
	for _, name := range slices.Sorted(maps.Keys(s.Events)) {
		e := s.Events[name]
		f.Events = append(f.Events, &Event{
			DetailType: name, Version: e.Version, Source: e.Source, Description: e.Description,
			Detail: e.Detail, SchemaName: e.Source + "@" + name, Path: spec.Pointer("events", name),
		})
	}
}

// lowerAsyncTools gives the async tool classes, if any, their one jobs table and tools function.
func (l *lowerer) lowerAsyncTools() {
	s, f := l.src, l.f
	for _, a := range f.Agents {
		if a.Tool != nil && a.Tool.Async {
			f.State.JobsTable = f.Name + "-jobs"
			if s.State != nil && s.State.JobsTable != "" {
				f.State.JobsTable = Qualified(s.State.JobsTable, l.env)
			}
			if f.Tools == nil {
				f.Tools = &Tools{FunctionName: f.Name + "-async-tools", RoleName: f.Name + "-async-tools", ConfigPath: rc.ToolsFile, Path: a.Tool.Path}
			}
			f.Tools.Classes = append(f.Tools.Classes, a)
		}
	}
}

// lowerTraffic copies the declared traffic the capacity report and rules read.
func (l *lowerer) lowerTraffic() {
	s, f := l.src, l.f
	if t := s.Traffic; t != nil {
		f.Traffic = &Traffic{
			ConversationsPerMinute: t.ConversationsPerMinute, StepsPerConversation: t.StepsPerConversation,
			StepDuration: durationOr(t.StepDuration, 0), Path: "/traffic",
		}
		if t.ConcurrentConversations != nil {
			f.Traffic.ConcurrentConversations = *t.ConcurrentConversations
		}
		if t.FanOutItems != nil {
			f.Traffic.FanOutItems = *t.FanOutItems
		}
	}
}

// SQS provisioned pollers, as Lambda accepts them for an SQS event source mapping.
const (
	PollersFloor      = 2   // minimum_pollers and maximum_pollers at least
	PollersMinCeiling = 200 // minimum_pollers at most
	PollersDefaultMax = 200 // maximum_pollers when not set
)

// MinPollers is the seed's sizing heuristic for a provisioned SQS event source mapping:
// ceil(10 / average_duration_seconds) × batch_size, bounded by min(100, 10 × batch_size).
func MinPollers(avgSeconds float64, batch int) int {
	if avgSeconds <= 0 || batch < 1 {
		return 0
	}
	n := int(math.Ceil(10/avgSeconds)) * batch
	return min(n, min(100, 10*batch))
}

// resolvePollers fills the bounds a class's provisioned_pollers leaves out: min from the
// seed's heuristic over the average step (traffic.step_duration, else step.p95), max
// Lambda's default and at least min; min above max is an error.
func (l *lowerer) resolvePollers() {
	for _, a := range l.f.Agents {
		if a.Lambda == nil || a.Lambda.Pollers == nil {
			continue
		}
		p, d := a.Lambda.Pollers, a.StepP95
		if t := l.f.Traffic; t != nil && t.StepDuration > 0 {
			d = t.StepDuration
		}
		if p.Min == 0 {
			p.Min = min(max(MinPollers(d.Seconds(), a.Lambda.BatchSize), PollersFloor), PollersMinCeiling)
		}
		if p.Max == 0 {
			p.Max = max(PollersDefaultMax, p.Min)
		}
		if p.Min > p.Max {
			l.ds.Errorf("P008", a.Lambda.Path+"/provisioned_pollers", "provisioned_pollers min %d is above max %d", p.Min, p.Max)
		}
	}
}

// countModelProcesses sets Model.Processes: Σ scaling.max over the classes whose policy
// reaches the model (directly, through fallbacks or context-window fallbacks); a class
// without a maximum counts as one process.
func countModelProcesses(f *Fleet) {
	for _, a := range f.Agents {
		seen := map[*Model]bool{}
		var walk func(m *Model)
		walk = func(m *Model) {
			if m == nil || seen[m] {
				return
			}
			seen[m] = true
			m.Processes += max(a.Scaling.Max, 1)
			for _, fb := range m.Fallbacks {
				walk(fb)
			}
			for _, fb := range m.ContextWindowFallbacks {
				walk(fb)
			}
		}
		for _, m := range a.Models {
			walk(m)
		}
	}
}

// lowerSecrets copies a handler's secret references (nil when it names none).
func lowerSecrets(s map[string]spec.APIKey) map[string]*APIKey {
	if len(s) == 0 {
		return nil
	}
	out := make(map[string]*APIKey, len(s))
	for name, k := range s {
		out[name] = lowerAPIKey(&k)
	}
	return out
}

// lowerAPIKey copies a policy's key reference (nil when it names none).
func lowerAPIKey(k *spec.APIKey) *APIKey {
	if k == nil {
		return nil
	}
	return &APIKey{Secret: k.Secret, JSONKey: k.JSONKey, SSM: k.SSM, KMSKey: k.KMSKey}
}

func (l *lowerer) lowerModels() {
	f, s := l.f, l.src
	byName := map[string]*Model{}
	for _, name := range slices.Sorted(maps.Keys(s.Models)) {
		m := s.Models[name]
		im := &Model{
			Name: name, Targets: m.Targets, Path: spec.Pointer("models", name),
			Retries: valueOr(m.Retries, Defaults.ModelRetries), SDKRetries: valueOr(m.SDKRetries, Defaults.ModelSDKRetries),
			Timeout: durationOr(m.Timeout, Defaults.ModelTimeout), AllowedFails: valueOr(m.AllowedFails, Defaults.ModelAllowedFails),
			Cooldown: durationOr(m.Cooldown, Defaults.ModelCooldown), MaxInFlight: valueOr(m.MaxInFlight, 0),
			TokensPerMinute: valueOr(m.TokensPerMinute, 0),
			BaseURL:         m.BaseURL, APIKeyEnv: m.APIKeyEnv, APIKey: lowerAPIKey(m.APIKey),
			TimeoutDefaulted: m.Timeout == nil,
		}
		if m.Price != nil {
			im.Price = &Price{InputPerMTok: m.Price.InputPerMTok, OutputPerMTok: m.Price.OutputPerMTok}
		}
		f.Models = append(f.Models, im)
		byName[name] = im
	}
	// resolve turns the policy names of one fallback list into policies.
	resolve := func(policy, field string, names []string) []*Model {
		var out []*Model
		for i, fb := range names {
			target, ok := byName[fb]
			if !ok {
				l.undefined(spec.Pointer("models", policy, field, fmt.Sprint(i)), "model policy", fb, slices.Sorted(maps.Keys(s.Models)))
				continue
			}
			out = append(out, target)
		}
		return out
	}
	for _, im := range f.Models {
		im.Fallbacks = resolve(im.Name, "fallbacks", s.Models[im.Name].Fallbacks)
		im.ContextWindowFallbacks = resolve(im.Name, "context_window_fallbacks", s.Models[im.Name].ContextWindowFallbacks)
	}
}

func (l *lowerer) undefined(path, kind, name string, known []string) {
	if l.removed[spec.Pointer(collectionOf[kind], name)] {
		return
	}
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

// lowerAgent resolves one class in phases: what it is, its queues, where it runs, how it
// scales, how events reach it and how long work keys live, then its event wiring. The
// phases run in this order because each reads what the earlier ones settled (the
// visibility timeout depends on the runtime; the idempotency window on queue and delivery).
func (l *lowerer) lowerAgent(name string, sa *spec.Agent) *Agent {
	a := l.agentIdentity(name, sa)
	classQueue, fleetQueue := l.queueSettings(sa)
	l.agentQueues(a, classQueue, fleetQueue)
	l.agentRuntime(a, sa, classQueue, fleetQueue)
	l.lowerAgentRollout(a, sa)
	a.Scaling = agentScaling(sa, a.Path)
	a.Fairness = agentFairness(sa, a)
	a.Delivery = l.agentDelivery(sa, a.Path)
	a.Idempotency = l.agentIdempotency(a, sa)
	l.wireEvents(a, sa)
	return a
}

// agentIdentity is everything about a class that no other setting influences: names,
// handler, model policy, payload limits, ordering, tool role.
func (l *lowerer) agentIdentity(name string, sa *spec.Agent) *Agent {
	f := l.f
	p := spec.Pointer("agents", name)
	a := &Agent{
		Name: name, Description: sa.Description, Path: p, Runtime: sa.Runtime,
		StepP95: sa.Step.P95.Duration, StepMax: sa.Step.Max.Duration,
		SideEffects:    nonEmptyOr(sa.SideEffects, Defaults.SideEffects),
		RoleName:       f.Name + "-" + name + "-worker",
		Image:          nonEmptyOr(sa.Image, f.Worker.Image),
		ConfigPath:     "runtime/" + name + ".json",
		ClaimCheckOver: int64(Defaults.ClaimCheckOver),
		Deadline:       durationOr(sa.Step.Deadline, 0),
	}
	if t := sa.Traffic; t != nil {
		if t.Share != nil {
			a.Share = *t.Share
		}
		if t.TokensPerStep != nil {
			a.TokensPerStep = *t.TokensPerStep
		}
		if t.OutputTokensPerStep != nil {
			a.OutputTokensPerStep = *t.OutputTokensPerStep
			if a.OutputTokensPerStep > a.TokensPerStep {
				l.ds.Errorf("P008", p+"/traffic/output_tokens_per_step", "output_tokens_per_step %d is above tokens_per_step %d, the input + output tokens it is part of", a.OutputTokensPerStep, a.TokensPerStep)
			}
		}
	}
	if sa.Payload != nil {
		a.ClaimCheckOver = int64(valueOr(sa.Payload.ClaimCheckOver, Defaults.ClaimCheckOver))
		a.MaxPayload = int64(valueOr(sa.Payload.Max, 0))
	}
	if o := sa.Ordering; o != nil && o.FIFO {
		a.FIFO, a.GroupBy, a.HighThroughput = true, o.GroupBy, o.HighThroughput
	}
	switch {
	case len(sa.Handler.Exec) > 0:
		a.Handler = Handler{Kind: "exec", Command: sa.Handler.Exec, InheritEnv: sa.Handler.InheritEnv, Secrets: lowerSecrets(sa.Handler.Secrets)}
	case sa.Handler.HTTP != "":
		a.Handler = Handler{Kind: "http", URL: sa.Handler.HTTP}
	case sa.Handler.LLM != nil:
		a.Handler = Handler{Kind: "llm", System: sa.Handler.LLM.System, Tools: sa.Handler.LLM.Tools, MaxTokens: sa.Handler.LLM.MaxTokens, MaxIterations: sa.Handler.LLM.MaxIterations}
	}
	for i, name := range sa.Model {
		at := p + "/model"
		if len(sa.Model) > 1 || l.idx != nil && l.idx.Has(at+"/0") {
			at = spec.Pointer("agents", a.Name, "model", fmt.Sprint(i))
		}
		m := l.model(name)
		if m == nil {
			l.undefined(at, "model policy", name, slices.Sorted(maps.Keys(l.src.Models)))
			continue
		}
		a.Models = append(a.Models, m)
	}
	if len(a.Models) > 0 && len(a.Models) == len(sa.Model) {
		a.Model = a.Models[0]
	}
	a.Output = sa.Output
	if sa.Tool != nil {
		id := strings.ReplaceAll(name, "-", "_")
		a.Tool = &Tool{Async: sa.Tool.Async, StatusPollAfter: durationOr(sa.Tool.StatusPollAfter, Defaults.StatusPollAfter), Path: p + "/tool"}
		if a.Tool.Async {
			a.Tool.StartName, a.Tool.StatusName = "start_"+id, "get_"+id+"_status"
		}
		if n := sa.Tool.Notify; n != nil {
			a.Tool.Notify = &Notify{APIDestination: n.APIDestination, Queue: Qualified(n.Queue, l.env),
				Rule: l.f.Name + "-" + name + "-notify", Path: p + "/tool/notify"}
		}
	}
	return a
}

// queueSettings are the class's own queue block and the fleet's defaults.queue (zero when
// absent); each queue setting comes from the class, else the fleet, else Defaults.
func (l *lowerer) queueSettings(sa *spec.Agent) (class, fleet spec.Queue) {
	if d := l.src.Defaults; d != nil && d.Queue != nil {
		fleet = *d.Queue
	}
	if sa.Queue != nil {
		class = *sa.Queue
	}
	return class, fleet
}

// agentQueues names and sizes the class queue and its DLQ (visibility waits for the runtime).
func (l *lowerer) agentQueues(a *Agent, cq, dq spec.Queue) {
	settingPath := func(field string, inClass bool) string {
		if inClass {
			return a.Path + "/queue/" + field
		}
		return "/defaults/queue/" + field
	}
	suffix := ""
	if a.FIFO {
		suffix = ".fifo"
	}
	a.Queue = Queue{
		Name: l.f.Name + "-" + a.Name + suffix, FIFO: a.FIFO,
		Retention:   firstDuration(cq.Retention, dq.Retention, Defaults.QueueRetention),
		LongPoll:    firstDuration(cq.LongPoll, dq.LongPoll, Defaults.LongPoll),
		Delay:       firstDuration(cq.Delay, dq.Delay, Defaults.QueueDelay),
		MaxReceives: firstSet(cq.MaxReceives, dq.MaxReceives, Defaults.MaxReceives),
		Path:        settingPath("visibility", cq.Visibility != nil),
	}
	a.DLQ = Queue{
		Name: l.f.Name + "-" + a.Name + "-dlq" + suffix, FIFO: a.FIFO,
		Retention:  firstDuration(cq.DLQRetention, dq.DLQRetention, Defaults.DLQRetention),
		Visibility: 5 * time.Minute,
		Path:       settingPath("dlq_retention", cq.DLQRetention != nil),
	}
}

// agentRuntime sets up where the class runs, and the visibility timeout and heartbeat that
// follow from it.
func (l *lowerer) agentRuntime(a *Agent, sa *spec.Agent, cq, dq spec.Queue) {
	f, name, p := l.f, a.Name, a.Path
	switch a.Runtime {
	case "lambda":
		timeout := min(roundUpSecond(a.StepMax), LambdaMaxTimeout) // W001 reports an overrun
		a.Lambda = &Lambda{FunctionName: f.Name + "-" + name, Timeout: timeout, BatchSize: Defaults.LambdaBatchSize, Memory: Defaults.LambdaMemory, Path: p + "/lambda"}
		if lc := sa.Lambda; lc != nil {
			a.Lambda.BatchSize = valueOr(lc.BatchSize, Defaults.LambdaBatchSize)
			a.Lambda.BatchingWindow = durationOr(lc.BatchingWindow, 0)
			a.Lambda.Memory = valueOr(lc.Memory, Defaults.LambdaMemory)
			if pp := lc.ProvisionedPollers; pp != nil {
				a.Lambda.Pollers = &Pollers{Min: valueOr(pp.Min, 0), Max: valueOr(pp.Max, 0)}
			}
		}
		if a.FIFO && a.Lambda.BatchSize > 1 {
			// One FIFO group's records run in order inside one invocation.
			a.Lambda.Timeout = min(roundUpSecond(time.Duration(a.Lambda.BatchSize)*a.StepMax), LambdaMaxTimeout)
		}
		// AWS guidance for SQS event sources: visibility at least six times the function
		// timeout, plus the batching window the records may wait in.
		a.Queue.Visibility = firstDuration(cq.Visibility, dq.Visibility, min(6*a.Lambda.Timeout+a.Lambda.BatchingWindow, MaxVisibility))
		if sa.Step.Heartbeat != nil {
			a.Heartbeat = sa.Step.Heartbeat.Duration
		}
	default:
		a.Queue.Visibility = firstDuration(cq.Visibility, dq.Visibility, min(roundUpSecond(VisibilityFor(a.StepMax)), MaxVisibility))
		a.Heartbeat = durationOr(sa.Step.Heartbeat, roundUpSecond(a.Queue.Visibility/3))
	}
	switch a.Runtime {
	case "eks":
		a.K8s = &K8s{Namespace: f.Worker.Namespace, Deployment: name + "-worker", ServiceAccount: name + "-worker"}
	case "agentcore":
		a.AgentCore = &AgentCore{RuntimeName: strings.ReplaceAll(f.Name+"_"+name, "-", "_"), Session: Defaults.AgentCoreSession, Path: p + "/agentcore"}
		if ac := sa.AgentCore; ac != nil {
			a.AgentCore.Session = durationOr(ac.Session, Defaults.AgentCoreSession)
			a.AgentCore.Instances = ac.Instances
		}
	}
}

// lowerAlarms reads alarms.notify: "create", or an existing topic's ARN (shape checked by the
// schema), which must be in the fleet's partition and region: CloudWatch notifies only a
// topic in the alarm's own region.
func (l *lowerer) lowerAlarms() {
	a := l.src.Alarms
	if a == nil || a.Notify == "" {
		return
	}
	f := l.f
	const path = "/alarms/notify"
	if a.Notify == spec.NotifyCreate {
		f.Alarms.Notify = &AlarmTopic{Create: true, Name: f.Name + "-alarms", Path: path}
		return
	}
	parts := strings.SplitN(a.Notify, ":", 6)
	if len(parts) != 6 {
		l.ds.Errorf("P008", path, "alarms.notify %q is neither create nor an SNS topic ARN", a.Notify)
		return
	}
	if part, region := parts[1], parts[3]; part != Partition(f.Region) || region != f.Region {
		d := l.ds.Errorf("P008", path, "alarms.notify names a topic in %s (partition %s); the fleet's alarms are in %s (partition %s)",
			region, part, f.Region, Partition(f.Region))
		d.Detail = "CloudWatch alarms notify only an SNS topic in their own region: name a topic in " + f.Region + ", or use notify: create."
		return
	}
	f.Alarms.Notify = &AlarmTopic{ARN: a.Notify, Path: path}
}

// lowerEKS derives the scaler role from the operator's role ARN
// (arn:PARTITION:iam::ACCOUNT:role/[PATH/]NAME, as the schema's pattern guarantees): the
// scaler role lives in the same partition and account, at the root path.
func lowerEKS(fleet string, e *spec.WorkerEKS) *EKS {
	out := &EKS{Cluster: e.Cluster, KEDAOperatorRole: e.KEDAOperatorRole, ScalerRole: fleet + "-keda-scaler", Path: "/worker/eks"}
	account := ""
	if parts := strings.SplitN(e.KEDAOperatorRole, ":", 6); len(parts) == 6 {
		out.Partition, account = parts[1], parts[4]
	}
	out.ScalerRoleARN = "arn:" + out.Partition + ":iam::" + account + ":role/" + out.ScalerRole
	return out
}

// agentScaling bounds the class's workers.
func agentScaling(sa *spec.Agent, p string) Scaling {
	sc := Scaling{
		Min: Defaults.ScalingMin, Max: Defaults.ScalingMax, PerReplica: Defaults.PerReplica,
		Cooldown: Defaults.ScalingCooldown, Activation: Defaults.ScalingActivation,
		ScaleOnInFlight: Defaults.ScaleOnInFlight, Path: p + "/scaling",
	}
	if s := sa.Scaling; s != nil {
		sc.Min, sc.Max = s.Min, s.Max
		sc.PerReplica = nonZeroOr(s.PerReplica, Defaults.PerReplica)
		sc.Cooldown = durationOr(s.Cooldown, Defaults.ScalingCooldown)
		sc.Activation = valueOr(s.Activation, Defaults.ScalingActivation)
		sc.ScaleOnInFlight = valueOr(s.InFlight, Defaults.ScaleOnInFlight)
	}
	return sc
}

// agentFairness is the class's per-key cap; its default depends on the worker's concurrency.
func agentFairness(sa *spec.Agent, a *Agent) *Fairness {
	fa := sa.Fairness
	if fa == nil {
		return nil
	}
	return &Fairness{
		Key:         fa.Key,
		MaxInFlight: valueOr(fa.MaxInFlightPerKey, FairShare(a.Scaling.PerReplica)),
		Cardinality: valueOr(fa.Cardinality, 0),
		Path:        a.Path + "/fairness",
	}
}

// agentDelivery is the EventBridge retry policy of the class's rule target.
func (l *lowerer) agentDelivery(sa *spec.Agent, p string) Delivery {
	var dd, cd spec.Delivery
	if d := l.src.Defaults; d != nil && d.Delivery != nil {
		dd = *d.Delivery
	}
	if sa.Delivery != nil {
		cd = *sa.Delivery
	}
	del := Delivery{
		Attempts:       firstSet(cd.Attempts, dd.Attempts, Defaults.DeliveryAttempts),
		MaxAge:         firstDuration(cd.MaxAge, dd.MaxAge, Defaults.DeliveryMaxAge),
		MaxAgeExplicit: cd.MaxAge != nil || dd.MaxAge != nil,
		Path:           "/defaults/delivery",
	}
	if sa.Delivery != nil {
		del.Path = p + "/delivery"
	}
	return del
}

// agentIdempotency is the work-key policy: the window must outlive every retry that can
// still reference the key, so by default it is the delivery max age plus queue retention.
func (l *lowerer) agentIdempotency(a *Agent, sa *spec.Agent) Idempotency {
	var di, ci spec.Idempotency
	if d := l.src.Defaults; d != nil && d.Idempotency != nil {
		di = *d.Idempotency
	}
	if sa.Idempotency != nil {
		ci = *sa.Idempotency
	}
	id := Idempotency{
		Window: firstDuration(ci.Window, di.Window, a.Delivery.MaxAge+a.Queue.Retention),
		Key:    ci.Key,
		Path:   "/defaults/idempotency",
	}
	if id.Key == nil {
		id.Key = di.Key
	}
	if sa.Idempotency != nil {
		id.Path = a.Path + "/idempotency"
	}
	return id
}

// wireEvents resolves the consumed event (and the rule that routes it) and emitted events.
func (l *lowerer) wireEvents(a *Agent, sa *spec.Agent) {
	f, p := l.f, a.Path
	events := func() []string { return slices.Sorted(maps.Keys(l.src.Events)) }
	if c := sa.Consumes; c != nil {
		ev := f.Event(c.Event)
		if ev == nil {
			l.undefined(p+"/consumes/event", "event", c.Event, events())
		} else {
			a.Consumes = &Consumes{Event: ev}
			ev.Consumers = append(ev.Consumers, a)
			for _, field := range slices.Sorted(maps.Keys(c.Match)) {
				a.Consumes.Match = append(a.Consumes.Match, Match{Field: field, Values: c.Match[field]})
			}
			a.Rule = &Rule{Name: f.Name + "-" + a.Name, TargetID: a.Name + "-queue", Pattern: pattern(ev, a.Consumes.Match)}
		}
	}
	for i, e := range sa.Emits {
		ev := f.Event(e)
		if ev == nil {
			l.undefined(fmt.Sprintf("%s/emits/%d", p, i), "event", e, events())
			continue
		}
		a.Emits = append(a.Emits, ev)
		ev.Producers = append(ev.Producers, a)
	}
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
		Name: name, Description: sw.Description, Path: p, Type: nonEmptyOr(sw.Type, Defaults.WorkflowType),
		StateMachineName: f.Name + "-" + name, RoleName: StateMachineRoleName(f.Name + "-" + name),
		LogGroup: StateMachineLogGroup(f.Name + "-" + name),
	}
	if sw.ItemsPerRun != nil {
		w.ItemsPerRun = *sw.ItemsPerRun
	}
	w.Rollout = lowerRollout(sw.Rollout, p)
	seen := map[string]bool{}
	names := map[string]int{}
	for i, ss := range sw.Steps {
		sp := fmt.Sprintf("%s/steps/%d", p, i)
		st := &Step{Path: sp, Name: ss.Name}
		agentName, agentPath := ss.Agent, sp+"/agent"
		timeout, heartbeat := ss.Timeout, ss.Heartbeat
		if ss.Approval != nil {
			if st = l.lowerApproval(ss, st); st != nil {
				if prev, dup := names[st.Name]; dup {
					l.ds.Errorf("P006", sp, "duplicate state name %q (also step %d)", st.Name, prev+1)
				}
				names[st.Name] = i
				w.Steps = append(w.Steps, st)
			}
			continue
		}
		switch {
		case ss.Agent != "" && ss.FanOut != nil:
			l.ds.Errorf("P008", sp, "a workflow step is either an agent step or a fan_out, not both")
			continue
		case ss.FanOut != nil:
			fo := ss.FanOut
			agentName, agentPath = fo.Agent, sp+"/fan_out/agent"
			timeout, heartbeat = fo.Timeout, fo.Heartbeat
			// 0 is Step Functions' "no limit" (10,000 child executions for a Distributed Map).
			st.FanOut = &FanOut{Items: fo.Items, MaxConcurrency: valueOr(fo.MaxConcurrency, Defaults.FanOutConcurrency), ExecutionType: nonEmptyOr(fo.ExecutionType, Defaults.FanOutExecution)}
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
		st.Timeout = durationOr(timeout, defaultTaskTimeout(a))
		st.Heartbeat = durationOr(heartbeat, 0)
		st.Retries = valueOr(ss.Retries, Defaults.StepRetries)
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

// lowerApproval fills st from an approval step, or reports why it cannot be one (nil).
func (l *lowerer) lowerApproval(ss *spec.WorkflowStep, st *Step) *Step {
	sp, ap := st.Path, ss.Approval
	if ss.Agent != "" || ss.FanOut != nil || ss.Heartbeat != nil || ss.Retries != nil || ss.Timeout != nil {
		d := l.ds.Errorf("P008", sp, "an approval step has only a name and its approval: no agent, fan_out, timeout, heartbeat or retries")
		d.Detail = "The wait's timeout is approval.timeout. A person sends no heartbeats, and a retry would ask again with a new token."
		return nil
	}
	if st.Name == "" {
		l.ds.Errorf("P008", sp+"/name", "an approval step needs a name: `fleetc approve RUN STEP` names it")
		return nil
	}
	ev := l.f.Event(ap.Notify)
	if ev == nil {
		l.undefined(sp+"/approval/notify", "event", ap.Notify, slices.Sorted(maps.Keys(l.src.Events)))
		return nil
	}
	st.Approval = &Approval{Notify: ev, OnTimeout: spec.OnTimeout(nonEmptyOr(string(ap.OnTimeout), Defaults.ApprovalOnTimeout))}
	st.Timeout = durationOr(ap.Timeout, 0)
	return st
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

// The character sets of SQS queue and S3 bucket names; the lengths are checked beside them
// (a counted repetition such as {1,61} compiles to that many copies, a millisecond of
// start-up for every fleetc command).
var (
	queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	bucketRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`)
)

// Name lengths AWS and Kubernetes allow, one per kind of name fleetc derives.
const (
	minBucketName, maxBucketName = 3, 63 // S3
	maxQueueName                 = 80    // SQS, .fifo included
	maxRuleName                  = 64    // EventBridge
	maxRoleName                  = 64    // IAM
	maxFunctionName              = 64    // Lambda
	maxAgentCoreRuntimeName      = 48
	maxObjectName                = 63 // a Kubernetes label value (the Deployment's name is one)
	maxStateMachineName          = 80
	maxArchiveName               = 48 // EventBridge
)

// checkNames reports derived names that AWS would refuse, at the spec value they come from.
func (l *lowerer) checkNames() {
	f := l.f
	limit := func(path, kind, name string, max int) {
		if len(name) > max {
			d := l.ds.Errorf("P007", path, "%s name %q is %d characters; AWS allows %d", kind, name, len(name), max)
			d.Detail = "Generated names are <fleet>-<name>[-suffix]; shorten the fleet or the class/workflow name."
			if l.env != "" {
				d.Detail = "Generated names are <fleet>-<environment>-<name>[-suffix] (environment " + l.env + "); shorten the fleet, environment or class/workflow name."
			}
		}
	}
	for _, a := range f.Agents {
		for _, q := range []Queue{a.Queue, a.DLQ} {
			base := strings.TrimSuffix(q.Name, ".fifo")
			if len(q.Name) > maxQueueName || !queueNameRE.MatchString(base) {
				d := l.ds.Errorf("P007", a.Path, "queue name %q is invalid: SQS allows %d characters of [A-Za-z0-9_-], .fifo included", q.Name, maxQueueName)
				d.Detail = "Shorten the fleet or agent name."
			}
		}
		if a.Rule != nil {
			limit(a.Path, "rule", a.Rule.Name, maxRuleName)
		}
		limit(a.Path, "IAM role", a.RoleName, maxRoleName)
		if a.Lambda != nil {
			limit(a.Path, "Lambda function", a.Lambda.FunctionName, maxFunctionName)
		}
		if a.AgentCore != nil {
			limit(a.Path, "AgentCore runtime", a.AgentCore.RuntimeName, maxAgentCoreRuntimeName)
		}
		if a.K8s != nil {
			limit(a.Path, "Kubernetes object", a.K8s.Deployment, maxObjectName)
		}
	}
	if e := f.KEDAScaler(); e != nil {
		limit(e.Path, "IAM role", e.ScalerRole, maxRoleName)
	}
	if t := f.Tools; t != nil {
		limit(t.Path, "IAM role", t.RoleName, maxRoleName)
		limit(t.Path, "Lambda function", t.FunctionName, maxFunctionName)
		for _, a := range f.Agents {
			if a.Lambda != nil && a.Lambda.FunctionName == t.FunctionName {
				d := l.ds.Errorf("P007", a.Path, "Lambda function name %q is also the async tools function's", t.FunctionName)
				d.Detail = "The async tools run as <fleet>-async-tools; rename the class."
			}
		}
		for _, a := range t.Classes {
			if n := a.Tool.Notify; n != nil && n.Queue != "" {
				limit(n.Path, "queue", n.Queue, maxQueueName)
			}
		}
	}
	for _, w := range f.Workflows {
		limit(w.Path, "state machine", w.StateMachineName, maxStateMachineName)
		limit(w.Path, "IAM role", w.RoleName, maxRoleName)
	}
	if f.Bus.Archive != nil {
		limit("/bus/archive", "archive", f.Bus.Archive.Name, maxArchiveName)
	}
	if b := f.State.ClaimCheckBucket; len(b) < minBucketName || len(b) > maxBucketName || !bucketRE.MatchString(b) {
		l.ds.Errorf("P007", "/fleet", "claim-check bucket name %q is invalid: S3 allows %d-%d characters of [a-z0-9.-]", f.State.ClaimCheckBucket, minBucketName, maxBucketName)
	}
	limit("/fleet", "target DLQ", f.TargetDLQ.Name, maxQueueName)
	// SQS, DynamoDB, CloudWatch Logs and S3 use a key of their own region only.
	if arn := f.State.KMSKeyARN; arn != "" {
		if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 && parts[3] != f.Region {
			d := l.ds.Errorf("P008", "/state/kms_key", "KMS key %s is in %s; the fleet is in %s", arn, parts[3], f.Region)
			d.Detail = "The queues, tables, log groups and bucket can use a key of their own region only: give a key in " + f.Region + ", or kms_key: create."
		}
	}
}

// nonEmptyOr is s, or def when s is empty (a string the spec left out).
func nonEmptyOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// nonZeroOr is v, or def when v is zero (an integer the spec left out).
func nonZeroOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// valueOr is *p, or def when p is nil (an optional setting the spec left out).
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// firstSet is the class's setting if set, else the fleet default's, else def.
func firstSet[T any](class, fleet *T, def T) T {
	if class != nil {
		return *class
	}
	return valueOr(fleet, def)
}

// durationOr is d's duration, or def when d is nil.
func durationOr(d *spec.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

// firstDuration is the class's duration if set, else the fleet default's, else def.
func firstDuration(class, fleet *spec.Duration, def time.Duration) time.Duration {
	if class != nil {
		return class.Duration
	}
	return durationOr(fleet, def)
}

func roundUpSecond(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(d.Seconds())) * time.Second
}

// Seconds is d in whole seconds, rounded up: what AWS APIs take.
func Seconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }
