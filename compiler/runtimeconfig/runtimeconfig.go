// Package runtimeconfig writes runtime/<class>.json, the config fleet-worker reads at start
// (format_version 1; contract in schemas/runtime-config.schema.json).
//
// Render is exported because compiler/keda embeds the very same bytes in each eks class's
// ConfigMap: one source for the config bytes is worth the one cross-backend import.
package runtimeconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// Format constants of the runtime config.
const (
	FormatVersion = 1
	// MetricsPort is where fleet-worker serves /metrics; compiler/keda exposes and probes it.
	MetricsPort = 9090
	MetricsAddr = ":9090"

	// The queue is the one retry layer: a failed step is left to reappear after its backoff
	// (full jitter from RetryBaseMS, capped at RetryCapMS) until maxReceiveCount dead-letters it.
	RetryBaseMS = 500
	RetryCapMS  = 30000

	// MaxMessages is SQS ReceiveMessage's ceiling, the worker's receive batch.
	MaxMessages = 10
	// DefaultMaxTokens applies when an llm handler does not say (the spec makes it optional).
	DefaultMaxTokens = 4096
)

// Config is runtime/<class>.json. Fields are declared in JSON key order; marshal re-sorts
// through a generic value anyway so key order never depends on this declaration.
type Config struct {
	Class         string      `json:"class"`
	ClaimCheck    ClaimCheck  `json:"claim_check"`
	Concurrency   int         `json:"concurrency"`
	Events        Events      `json:"events"`
	Fleet         string      `json:"fleet"`
	FormatVersion int         `json:"format_version"`
	Handler       Handler     `json:"handler"`
	Idempotency   Idempotency `json:"idempotency"`
	Jobs          *Jobs       `json:"jobs,omitempty"`
	Models        Models      `json:"models"`
	Queue         Queue       `json:"queue"`
	Region        string      `json:"region"`
	Retry         Retry       `json:"retry"`
	Runtime       string      `json:"runtime"`
	Step          Step        `json:"step"`
	Telemetry     Telemetry   `json:"telemetry"`
}

// ClaimCheck is the S3 offload of large payloads.
type ClaimCheck struct {
	Bucket         string `json:"bucket"`
	ThresholdBytes int64  `json:"threshold_bytes"`
}

// Events configures completion events.
type Events struct {
	Bus        string `json:"bus"`
	BusModel   string `json:"bus_model"`
	Emits      []Emit `json:"emits"`
	MaxEntries int    `json:"max_entries"`
}

// Emit is one event the class publishes on completion.
type Emit struct {
	DetailType string `json:"detail_type"`
	Source     string `json:"source"`
	Version    int    `json:"version"`
}

// Handler is how a step runs. Only the fields of its Type are emitted (the schema is closed
// per type), hence the pointers: an llm handler's empty tools list must still appear.
type Handler struct {
	Command       []string  `json:"command,omitempty"`
	MaxIterations int       `json:"max_iterations,omitempty"`
	MaxTokens     *int      `json:"max_tokens,omitempty"`
	System        *string   `json:"system,omitempty"`
	Tools         *[]string `json:"tools,omitempty"`
	Type          string    `json:"type"`
	URL           string    `json:"url,omitempty"`
}

// Idempotency is the work-key policy.
type Idempotency struct {
	Key           []string `json:"key"`
	Table         string   `json:"table"`
	WindowSeconds int64    `json:"window_seconds"`
}

// Jobs is the async-tool job record the worker keeps current (pk "JOB#<id>"): RUNNING when a
// step starts, SUCCEEDED or FAILED when it ends. Present only for async tool classes.
type Jobs struct {
	IDField                string `json:"id_field"`
	StatusPollAfterSeconds int64  `json:"status_poll_after_seconds"`
	Table                  string `json:"table"`
}

// JobIDField is the detail field carrying the job id (the start tool's jobId).
const JobIDField = "jobId"

// Models is the router section: the class's policy and everything its fallbacks reach.
type Models struct {
	Policies map[string]ModelPolicy `json:"policies"`
	Policy   string                 `json:"policy"`
}

// ModelPolicy is one routing policy.
type ModelPolicy struct {
	AllowedFails           int      `json:"allowed_fails"`
	APIKeyEnv              string   `json:"api_key_env,omitempty"`
	BaseURL                string   `json:"base_url,omitempty"`
	ContextWindowFallbacks []string `json:"context_window_fallbacks,omitempty"`
	// Processes is the most worker processes that share this policy's fleet-wide
	// max_in_flight and tokens_per_minute (Σ scaling.max of the classes that can reach it);
	// each process enforces its share. Omitted when 1.
	Processes       int      `json:"processes,omitempty"`
	CooldownSeconds int64    `json:"cooldown_seconds"`
	Fallbacks       []string `json:"fallbacks"`
	MaxInFlight     int      `json:"max_in_flight"`
	Retries         int      `json:"retries"`
	Targets         []string `json:"targets"`
	TimeoutSeconds  int64    `json:"timeout_seconds"`
	TokensPerMinute int      `json:"tokens_per_minute"`
}

// Queue is the class's SQS side.
type Queue struct {
	DLQName                  string `json:"dlq_name"`
	FIFO                     bool   `json:"fifo"`
	GroupBy                  string `json:"group_by"`
	HeartbeatSeconds         int64  `json:"heartbeat_seconds"`
	MaxMessages              int    `json:"max_messages"`
	MaxReceives              int    `json:"max_receives"`
	Name                     string `json:"name"`
	VisibilityTimeoutSeconds int64  `json:"visibility_timeout_seconds"`
	WaitTimeSeconds          int64  `json:"wait_time_seconds"`
}

// Retry is the in-queue backoff.
type Retry struct {
	BaseMS      int `json:"base_ms"`
	CapMS       int `json:"cap_ms"`
	MaxAttempts int `json:"max_attempts"`
}

// Step bounds one handler call.
type Step struct {
	MaxSeconds int64 `json:"max_seconds"`
	P95Seconds int64 `json:"p95_seconds"`
}

// Telemetry names the service and the metrics listener.
type Telemetry struct {
	MetricsAddr string `json:"metrics_addr"`
	ServiceName string `json:"service_name"`
}

// Code documents one diagnostic code this package emits.
type Code = diag.Code

// Codes lists every diagnostic code Generate can emit. (G002 belongs to compiler/keda.)
func Codes() []Code {
	return []Code{{
		ID: "G001", Severity: "error",
		Summary: "the runtime config of a class cannot be written",
		Explain: "fleetc could not build runtime/<class>.json, the config fleet-worker reads at start: the class has no handler, an exec handler without a command, or an unknown handler kind " +
			"(possible only for an IR built in code; the loader refuses such specs). No config is written for the class, and its Lambda function, AgentCore runtime or ConfigMap cannot start. " +
			"Report it with the spec that caused it.",
	}}
}

// Generate writes runtime/<class>.json for every agent class.
func Generate(f *ir.Fleet) ([]artifact.File, diag.Diagnostics) {
	var (
		files []artifact.File
		ds    diag.Diagnostics
	)
	for _, a := range f.Agents {
		b, err := Render(f, a)
		if err != nil {
			d := ds.Errorf("G001", a.Path, "cannot write the runtime config of %q: %v", a.Name, err)
			d.Detail = "This is a compiler bug or an IR built in code without a handler; please report it."
			continue
		}
		files = append(files, artifact.File{Path: path(a), Bytes: b})
	}
	return files, ds
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
	return marshal(c)
}

// Build returns the typed runtime config of one class.
func Build(f *ir.Fleet, a *ir.Agent) (*Config, error) {
	if f == nil || a == nil {
		return nil, fmt.Errorf("nil fleet or agent")
	}
	h, err := handler(a.Handler)
	if err != nil {
		return nil, err
	}
	c := &Config{
		FormatVersion: FormatVersion,
		Fleet:         f.Name,
		Class:         a.Name,
		Region:        f.Region,
		Runtime:       a.Runtime,
		Queue: Queue{
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
		Step:        Step{P95Seconds: ir.Seconds(a.StepP95), MaxSeconds: ir.Seconds(a.StepMax)},
		// One attempt per receive: the worker's retry budget is the redrive count, no more.
		// The worker gives up one receive before SQS's redrive would: it then dead-letters the
		// message itself, with ERROR_CODE and (for tasks) SendTaskFailure, and the last receive
		// is left for a worker that crashed mid-step.
		Retry: Retry{MaxAttempts: max(1, a.Queue.MaxReceives-1), BaseMS: RetryBaseMS, CapMS: RetryCapMS},
		Idempotency: Idempotency{
			Table:         f.State.IdempotencyTable,
			WindowSeconds: ir.Seconds(a.Idempotency.Window),
			Key:           nonNil(a.Idempotency.Key),
		},
		ClaimCheck: ClaimCheck{Bucket: f.State.ClaimCheckBucket, ThresholdBytes: a.ClaimCheckOver},
		Events: Events{
			Bus: f.Bus.Name, BusModel: f.Bus.Model, MaxEntries: f.Bus.MaxEntries,
			Emits: make([]Emit, 0, len(a.Emits)),
		},
		Handler:   h,
		Models:    models(a.Model),
		Telemetry: Telemetry{ServiceName: f.Name + "-" + a.Name, MetricsAddr: MetricsAddr},
	}
	if a.Tool != nil && a.Tool.Async && f.State.JobsTable != "" {
		c.Jobs = &Jobs{Table: f.State.JobsTable, IDField: JobIDField, StatusPollAfterSeconds: ir.Seconds(a.Tool.StatusPollAfter)}
	}
	if a.FIFO {
		c.Queue.GroupBy = a.GroupBy
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
	for _, e := range a.Emits {
		c.Events.Emits = append(c.Events.Emits, Emit{DetailType: e.DetailType, Source: e.Source, Version: e.Version})
	}
	return c, nil
}

func handler(h ir.Handler) (Handler, error) {
	switch h.Kind {
	case "exec":
		if len(h.Command) == 0 {
			return Handler{}, fmt.Errorf("exec handler has no command")
		}
		return Handler{Type: "exec", Command: h.Command}, nil
	case "http":
		return Handler{Type: "http", URL: h.URL}, nil
	case "llm":
		system, tools, maxTokens := h.System, nonNil(h.Tools), h.MaxTokens
		if maxTokens <= 0 {
			maxTokens = DefaultMaxTokens
		}
		return Handler{Type: "llm", System: &system, Tools: &tools, MaxTokens: &maxTokens, MaxIterations: h.MaxIterations}, nil
	}
	return Handler{}, fmt.Errorf("unknown handler kind %q", h.Kind)
}

// models is the class's policy plus every policy reachable through fallbacks, so the worker's
// router can fail over without knowing the rest of the fleet.
func models(m *ir.Model) Models {
	out := Models{Policies: map[string]ModelPolicy{}}
	if m == nil {
		return out
	}
	out.Policy = m.Name
	for _, p := range Closure(m) {
		mp := ModelPolicy{
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

// Closure returns m and every policy reachable from it through fallbacks, sorted by name.
// Cycles are tolerated (each policy appears once).
func Closure(m *ir.Model) []*ir.Model {
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
	walk(m)
	out := make([]*ir.Model, 0, len(seen))
	for _, p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// marshal encodes v with sorted keys at every level (struct field order cannot leak),
// two-space indent, no HTML escaping, and a trailing newline.
func marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(generic); err != nil { // Encode appends the trailing newline
		return nil, err
	}
	return buf.Bytes(), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
