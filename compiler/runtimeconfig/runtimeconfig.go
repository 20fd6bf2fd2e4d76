// Package runtimeconfig writes runtime/<class>.json, the config fleet-worker reads at start.
// The format's types live in schemas/runtimeconfig, shared with the worker; this package only
// fills them from the IR. The compiler driver renders each config once (Render) and hands the
// bytes to the backends that embed them (compiler/keda's ConfigMap, compiler/terraform's Lambda
// environment), so no backend imports another.
package runtimeconfig

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/awslimits"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
	"github.com/fleetc/fleetc/spec/diag"
)

// Format constants of the runtime config.
const (
	FormatVersion = rc.FormatVersion
	// MetricsAddr is telemetry.metrics_addr: no listener unless the environment asks for
	// one (FLEET_METRICS_ADDR). A fixed default port would collide when two classes run on
	// one host, and an all-interfaces default would expose metrics nobody asked to publish;
	// the KEDA Deployment, which has a pod network namespace of its own, sets the variable.
	MetricsAddr = ""

	// The queue is the one retry layer: a failed step is left to reappear after its backoff
	// (full jitter from RetryBaseMS, capped at RetryCapMS) until maxReceiveCount dead-letters it.
	RetryBaseMS = 500
	RetryCapMS  = 30000

	// MaxMessages is SQS ReceiveMessage's ceiling, the worker's receive batch.
	MaxMessages = awslimits.SQSMaxBatch
	// DefaultMaxTokens applies when an llm handler does not say (the spec makes it optional).
	DefaultMaxTokens = 4096
	// JobIDField is the detail field carrying an async tool's job id (the start tool's jobId).
	JobIDField = "jobId"
	// AgentCoreQualifier is the runtime endpoint the dispatcher invokes: DEFAULT, the one
	// AgentCore creates and points at the latest version.
	AgentCoreQualifier = "DEFAULT"
	// AgentCoreSyncLimitSeconds is how long one InvokeAgentRuntime call waits for its step
	// (14 min): under AgentCore's 15-minute synchronous limit, leaving time for the answer.
	AgentCoreSyncLimitSeconds = 840
)

// Code documents one diagnostic code this package emits.
type Code = diag.Code

// Codes lists every diagnostic code Generate can emit. (G002 belongs to compiler/keda.)
func Codes() []Code {
	return []Code{{
		ID: "G001", Severity: diag.Error,
		Summary: "the runtime config of a class cannot be written",
		Explain: "fleetc could not build runtime/<class>.json, the config fleet-worker reads at start: the class has no handler, an exec handler without a command, or an unknown handler kind " +
			"(possible only for an IR built in code; the loader refuses such specs). No config is written for the class, and its Lambda function, AgentCore runtime or ConfigMap cannot start. " +
			"Report it with the spec that caused it.",
	}}
}

// Configs holds each class's rendered runtime config, by class name, and the tools config
// under rc.ToolsFile (a path, never a class name): rendered once by the
// compiler driver, written as runtime/<class>.json and embedded verbatim by the backends that
// ship a config (compiler/keda's ConfigMap, compiler/terraform's config objects).
type Configs map[string][]byte

// RenderAll renders every class's config; a class that cannot be rendered gets G001 and no
// entry.
func RenderAll(f *ir.Fleet) (Configs, diag.Diagnostics) {
	var ds diag.Diagnostics
	out := Configs{}
	for _, a := range f.Agents {
		b, err := Render(f, a)
		if err != nil {
			d := ds.Errorf("G001", a.Path, "cannot write the runtime config of %q: %v", a.Name, err)
			d.Detail = "This is a compiler bug or an IR built in code without a handler; please report it."
			continue
		}
		out[a.Name] = b
	}
	if f.Tools != nil {
		b, err := RenderTools(f)
		if err != nil {
			d := ds.Errorf("G001", f.Tools.Path, "cannot write the tools config: %v", err)
			d.Detail = "This is a compiler bug; please report it."
		} else {
			out[rc.ToolsFile] = b
		}
	}
	return out, ds
}

// Files returns runtime/<class>.json for every class in configs, in the fleet's class order.
func Files(f *ir.Fleet, configs Configs) []artifact.File {
	var files []artifact.File
	for _, a := range f.Agents {
		if b, ok := configs[a.Name]; ok {
			files = append(files, artifact.File{Path: path(a), Bytes: b})
		}
	}
	if b, ok := configs[rc.ToolsFile]; ok {
		files = append(files, artifact.File{Path: rc.ToolsFile, Bytes: b})
	}
	return files
}

// Generate writes runtime/<class>.json for every agent class.
func Generate(f *ir.Fleet) ([]artifact.File, diag.Diagnostics) {
	configs, ds := RenderAll(f)
	return Files(f, configs), ds
}

func path(a *ir.Agent) string {
	if a.ConfigPath != "" {
		return a.ConfigPath
	}
	return "runtime/" + a.Name + ".json"
}

// Render returns the runtime config bytes of one class: JSON, keys sorted, two-space indent,
// trailing newline.
func Render(f *ir.Fleet, a *ir.Agent) ([]byte, error) {
	c, err := Build(f, a)
	if err != nil {
		return nil, err
	}
	return rc.Marshal(c)
}

// Build returns the typed runtime config of one class.
func Build(f *ir.Fleet, a *ir.Agent) (*rc.Config, error) {
	if f == nil || a == nil {
		return nil, fmt.Errorf("nil fleet or agent")
	}
	h, err := handler(a.Handler)
	if err != nil {
		return nil, err
	}
	c := &rc.Config{
		FormatVersion: FormatVersion,
		Fleet:         f.Name,
		Class:         a.Name,
		Region:        f.Region,
		Runtime:       a.Runtime,
		Queue: rc.Queue{
			Name:                     a.Queue.Name,
			DLQName:                  a.DLQ.Name,
			FIFO:                     a.Queue.FIFO,
			VisibilityTimeoutSeconds: ir.Seconds(a.Queue.Visibility),
			HeartbeatSeconds:         ir.Seconds(a.Heartbeat),
			WaitTimeSeconds:          ir.Seconds(a.Queue.LongPoll),
			MaxMessages:              MaxMessages,
			MaxReceives:              a.Queue.MaxReceives,
		},
		Concurrency: a.Scaling.PerReplica,
		Step:        rc.Step{P95Seconds: ir.Seconds(a.StepP95), MaxSeconds: ir.Seconds(a.StepMax)},
		// One attempt per receive: the worker's retry budget is the redrive count, no more.
		// The worker gives up one receive before SQS's redrive would: it then dead-letters the
		// message itself, with ERROR_CODE and (for tasks) SendTaskFailure, and the last receive
		// is left for a worker that crashed mid-step.
		Retry: rc.Retry{MaxAttempts: a.RetryLimit(), BaseMS: RetryBaseMS, CapMS: RetryCapMS},
		Idempotency: rc.Idempotency{
			Table:         f.State.IdempotencyTable,
			WindowSeconds: ir.Seconds(a.Idempotency.Window),
			Key:           nonNil(a.Idempotency.Key),
		},
		ClaimCheck: rc.ClaimCheck{Bucket: f.State.ClaimCheckBucket, ThresholdBytes: int(a.ClaimCheckOver), ReadPrefixes: ir.ClaimCheckReadPrefixes(a)},
		Events: rc.Events{
			Bus: f.Bus.Name, BusModel: f.Bus.Model, MaxEntries: f.Bus.MaxEntries,
			FillOrder: rc.FillOrder(),
			Emits:     make([]rc.Emit, 0, len(a.Emits)),
		},
		Handler:   h,
		Models:    models(a.Models),
		Telemetry: rc.Telemetry{ServiceName: f.Name + "-" + a.Name, MetricsAddr: MetricsAddr},
	}
	if a.Tool != nil && a.Tool.Async && f.State.JobsTable != "" {
		c.Jobs = &rc.Jobs{Table: f.State.JobsTable, IDField: JobIDField, StatusPollAfterSeconds: ir.Seconds(a.Tool.StatusPollAfter)}
	}
	if named := f.AsyncToolClasses(a); len(named) > 0 {
		// Only the classes the handler names: the worker offers and runs these, and its role
		// may publish only their request events (compiler/terraform).
		all, err := BuildTools(f)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(named))
		for i, n := range named {
			names[i] = n.Name
		}
		c.AsyncTools = all.Only(names)
	}
	if a.FIFO {
		c.Queue.GroupBy = a.GroupBy
	}
	if fa := a.Fairness; fa != nil {
		c.Fairness = &rc.Fairness{Key: fa.Key, MaxInFlightPerKey: fa.MaxInFlight}
	}
	if ac := a.AgentCore; ac != nil {
		// The dispatcher's side (and the runtime's sync limit): a conversation's steps share a
		// runtime session, keyed by the class's group_by (the trace id when there is none).
		c.AgentCore = &rc.AgentCore{RuntimeName: ac.RuntimeName, Qualifier: AgentCoreQualifier,
			SessionField: a.GroupBy, SyncLimitSeconds: AgentCoreSyncLimitSeconds}
	}
	if a.Runtime == "lambda" {
		// The event source mapping receives and hands the function a batch; the function runs
		// it concurrently and never heartbeats: visibility is sized at 6× the function timeout,
		// which the function cannot outlive.
		c.Queue.HeartbeatSeconds = 0
		if a.Lambda != nil {
			c.Queue.MaxMessages = min(max(a.Lambda.BatchSize, 1), MaxMessages)
			c.Concurrency = max(a.Lambda.BatchSize, 1)
		}
	}
	if a.Output != nil {
		// The output schema came from YAML: plain maps, lists and scalars always marshal.
		schema, _ := json.Marshal(a.Output)
		c.Output = &rc.Output{Schema: schema, MaxBytes: int(a.OutputMaxBytes())}
	}
	for _, e := range a.Emits {
		c.Events.Emits = append(c.Events.Emits, rc.Emit{DetailType: e.DetailType, Source: e.Source, Version: e.Version, Detail: emitDetail(a, e)})
	}
	return c, nil
}

func handler(h ir.Handler) (rc.Handler, error) {
	switch h.Kind {
	case "exec":
		if len(h.Command) == 0 {
			return rc.Handler{}, fmt.Errorf("exec handler has no command")
		}
		return rc.Handler{Type: rc.HandlerExec, Command: h.Command, InheritEnv: h.InheritEnv, Secrets: secretRefs(h.Secrets)}, nil
	case "http":
		return rc.Handler{Type: rc.HandlerHTTP, URL: h.URL}, nil
	case "llm":
		maxTokens := h.MaxTokens
		if maxTokens <= 0 {
			maxTokens = DefaultMaxTokens
		}
		return rc.Handler{Type: rc.HandlerLLM, System: h.System, Tools: nonNil(h.Tools), MaxTokens: maxTokens, MaxIterations: h.MaxIterations}, nil
	}
	return rc.Handler{}, fmt.Errorf("unknown handler kind %q", h.Kind)
}

// models is the class's policies (the default first) plus every policy reachable through
// fallbacks, so the worker's router can fail over without knowing the rest of the fleet.
func models(allowed []*ir.Model) rc.Models {
	out := rc.Models{Policies: map[string]rc.ModelPolicy{}}
	if len(allowed) == 0 {
		return out
	}
	out.Policy = allowed[0].Name
	if len(allowed) > 1 {
		for _, m := range allowed {
			out.Allowed = append(out.Allowed, m.Name)
		}
	}
	for _, p := range Closure(allowed...) {
		mp := rc.ModelPolicy{
			Targets:         nonNil(p.Targets),
			Fallbacks:       []string{},
			Retries:         p.Retries,
			TimeoutSeconds:  ir.Seconds(p.Timeout),
			AllowedFails:    p.AllowedFails,
			CooldownSeconds: ir.Seconds(p.Cooldown),
			MaxInFlight:     p.MaxInFlight,
			TokensPerMinute: p.TokensPerMinute,
			BaseURL:         p.BaseURL,
			APIKeyEnv:       p.APIKeyEnv,
			APIKey:          apiKey(p.APIKey),
		}
		if n := p.Processes; n > 1 {
			mp.Processes = n
		}
		for _, fb := range p.Fallbacks {
			mp.Fallbacks = append(mp.Fallbacks, fb.Name)
		}
		for _, fb := range p.ContextWindowFallbacks {
			mp.ContextWindowFallbacks = append(mp.ContextWindowFallbacks, fb.Name)
		}
		out.Policies[p.Name] = mp
	}
	return out
}

// secretRefs is a handler's secrets for the worker: where to read each, never a value.
func secretRefs(s map[string]*ir.APIKey) map[string]rc.APIKey {
	if len(s) == 0 {
		return nil
	}
	out := make(map[string]rc.APIKey, len(s))
	for name, k := range s {
		out[name] = *apiKey(k)
	}
	return out
}

// apiKey is the key's reference for the worker: where to read it, never its value (the
// KMS key is IAM's business, not the worker's).
func apiKey(k *ir.APIKey) *rc.APIKey {
	if k == nil {
		return nil
	}
	return &rc.APIKey{Secret: k.Secret, JSONKey: k.JSONKey, SSM: k.SSM}
}

// Closure returns ms and every policy reachable from them through fallbacks, sorted by name.
// Cycles are tolerated (each policy appears once).
func Closure(ms ...*ir.Model) []*ir.Model {
	seen := map[string]*ir.Model{}
	var walk func(*ir.Model)
	walk = func(p *ir.Model) {
		if p == nil || seen[p.Name] != nil {
			return
		}
		seen[p.Name] = p
		for _, fb := range p.Fallbacks {
			walk(fb)
		}
		for _, fb := range p.ContextWindowFallbacks {
			walk(fb)
		}
	}
	for _, m := range ms {
		walk(m)
	}
	out := make([]*ir.Model, 0, len(seen))
	for _, p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// emitDetail is the contract of one emitted event as the worker keeps it (ir.EmitDetail).
func emitDetail(a *ir.Agent, e *ir.Event) rc.EmitDetail {
	p := ir.EmitDetailOf(a, e)
	schema := rc.Document("{}")
	if e.Detail != nil {
		// The detail schema came from YAML: plain maps, lists and scalars always marshal.
		schema, _ = json.Marshal(e.Detail)
	}
	return rc.EmitDetail{Carry: nonNil(p.Carry), WorkerFields: nonNil(p.Worker), FromOutput: p.FromOutput, Schema: schema}
}
