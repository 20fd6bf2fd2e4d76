// Package runtimeconfig is the runtime config format (runtime/<class>.json, format_version 1):
// the one set of Go types the compiler writes and fleet-worker reads, beside the JSON Schema
// that is its contract (schemas/runtime-config.schema.json).
//
// It is a leaf: of this module it imports only the embedded schemas, so the compiler and the
// worker can both use it while the worker still imports neither the compiler nor the spec.
//
// Integer kinds follow one rule: durations (*_seconds) are int64, like the compiler's
// ir.Seconds; counts, milliseconds and byte sizes (at most 1 MiB) are int.
package runtimeconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/internal/genjson"
	"github.com/fleetc/fleetc/schemas"
	"github.com/fleetc/fleetc/schemas/awslimits"
)

// FormatVersion is the format these types describe.
const FormatVersion = 1

// SchemaID is the $id of schemas/runtime-config.schema.json.
const SchemaID = "https://fleetc.dev/schemas/runtime-config.schema.json"

// SchemaFile is the schema's name in schemas.FS.
const SchemaFile = "runtime-config.schema.json"

// Runtime names (Config.Runtime).
const (
	RuntimeEKS       = "eks"
	RuntimeLambda    = "lambda"
	RuntimeAgentCore = "agentcore"
)

// Handler types (Handler.Type).
// AgentCorePort is the port fleet-worker listens on in an agentcore class's container (the
// AgentCore runtime service contract: /invocations and /ping on 8080, every interface): an
// http handler there must listen on another (rule W010).
const AgentCorePort = "8080"

const (
	HandlerExec = "exec"
	HandlerHTTP = "http"
	HandlerLLM  = "llm"
)

// Config is runtime/<class>.json.
type Config struct {
	FormatVersion int    `json:"format_version"`
	Fleet         string `json:"fleet"`
	Class         string `json:"class"`
	Region        string `json:"region"`
	Runtime       string `json:"runtime"`
	Queue         Queue  `json:"queue"`
	Concurrency   int    `json:"concurrency"`
	// Fairness caps one tenant's steps in flight; nil: no cap.
	Fairness    *Fairness   `json:"fairness,omitempty"`
	Step        Step        `json:"step"`
	Retry       Retry       `json:"retry"`
	Idempotency Idempotency `json:"idempotency"`
	Jobs        *Jobs       `json:"jobs,omitempty"`
	// AsyncTools is the tools config of the async classes an llm handler names
	// ("async:<class>"), only those: what the handler offers its model and runs in-process.
	AsyncTools *Tools     `json:"async_tools,omitempty"`
	AgentCore  *AgentCore `json:"agentcore,omitempty"`
	ClaimCheck ClaimCheck `json:"claim_check"`
	Events     Events     `json:"events"`
	Output     *Output    `json:"output,omitempty"`
	Handler    Handler    `json:"handler"`
	Models     Models     `json:"models"`
	Telemetry  Telemetry  `json:"telemetry"`
}

// Queue is the class's SQS side.
type Queue struct {
	Name                     string `json:"name"`
	DLQName                  string `json:"dlq_name"`
	FIFO                     bool   `json:"fifo"`
	GroupBy                  string `json:"group_by"`
	VisibilityTimeoutSeconds int64  `json:"visibility_timeout_seconds"`
	HeartbeatSeconds         int64  `json:"heartbeat_seconds"`
	WaitTimeSeconds          int64  `json:"wait_time_seconds"`
	MaxMessages              int    `json:"max_messages"`
	MaxReceives              int    `json:"max_receives"`
}

// VisibilityTimeout as a duration.
func (q Queue) VisibilityTimeout() time.Duration { return seconds(q.VisibilityTimeoutSeconds) }

// Heartbeat as a duration (0 = off).
func (q Queue) Heartbeat() time.Duration { return seconds(q.HeartbeatSeconds) }

// RenewEvery is how often a step renews what it holds where the poller's heartbeat is not
// there to do it (Lambda, AgentCore, the dispatcher's own poller): the heartbeat, else a
// third of the visibility timeout, so two renewals can fail before the message reappears.
func (q Queue) RenewEvery() time.Duration {
	if hb := q.Heartbeat(); hb > 0 {
		return hb
	}
	return q.VisibilityTimeout() / 3
}

// WaitTime (the long poll) as a duration.
func (q Queue) WaitTime() time.Duration { return seconds(q.WaitTimeSeconds) }

// Step bounds one handler call.
type Step struct {
	P95Seconds int64 `json:"p95_seconds"`
	MaxSeconds int64 `json:"max_seconds"`
}

// Max as a duration.
func (s Step) Max() time.Duration { return seconds(s.MaxSeconds) }

// Retry is the in-queue backoff (full jitter from BaseMS, capped at CapMS).
type Retry struct {
	MaxAttempts int `json:"max_attempts"`
	BaseMS      int `json:"base_ms"`
	CapMS       int `json:"cap_ms"`
}

// Base as a duration.
func (r Retry) Base() time.Duration { return time.Duration(r.BaseMS) * time.Millisecond }

// Cap as a duration.
func (r Retry) Cap() time.Duration { return time.Duration(r.CapMS) * time.Millisecond }

// Idempotency is the work-key policy and its DynamoDB table.
type Idempotency struct {
	Table         string   `json:"table"`
	WindowSeconds int64    `json:"window_seconds"`
	Key           []string `json:"key"`
}

// Window as a duration.
func (i Idempotency) Window() time.Duration { return seconds(i.WindowSeconds) }

// Jobs is the async-tool job record (pk "JOB#<id>") the worker moves RUNNING -> SUCCEEDED |
// FAILED; nil for classes that are not async tools.
type Jobs struct {
	Table                  string `json:"table"`
	IDField                string `json:"id_field"`
	StatusPollAfterSeconds int64  `json:"status_poll_after_seconds"`
}

// StatusPollAfter as a duration.
func (j Jobs) StatusPollAfter() time.Duration { return seconds(j.StatusPollAfterSeconds) }

// Fairness is a class's per-tenant cap (standard queues only): the worker runs at most
// MaxInFlightPerKey steps of one value of detail.<Key> at once and re-sends a message over
// the cap to the back of the queue, its group the key (docs/fairness.md).
type Fairness struct {
	Key               string `json:"key"`
	MaxInFlightPerKey int    `json:"max_in_flight_per_key"`
}

// AgentCore is how an agentcore class is fed (runtime agentcore only): the dispatcher reads
// the class queue and calls InvokeAgentRuntime on the runtime (its ARN comes from the
// environment, FLEET_AGENT_RUNTIME_ARN, which Terraform sets); fleet-worker inside the
// runtime reads sync_limit_seconds too.
type AgentCore struct {
	RuntimeName string `json:"runtime_name"`
	// Qualifier names the runtime endpoint ("DEFAULT": the latest version).
	Qualifier string `json:"qualifier"`
	// SessionField is the detail field naming the conversation; its hash is the runtime
	// session id, so a conversation's steps share a session. "" = the trace id.
	SessionField string `json:"session_field"`
	// SyncLimitSeconds is the longest one InvokeAgentRuntime call waits for a step; past it
	// the runtime answers busy and keeps the step running, and the dispatcher asks again.
	SyncLimitSeconds int64 `json:"sync_limit_seconds"`
}

// SyncLimit as a duration.
func (a AgentCore) SyncLimit() time.Duration { return seconds(a.SyncLimitSeconds) }

// ClaimCheck is the S3 offload of large payloads.
type ClaimCheck struct {
	Bucket         string `json:"bucket"`
	ThresholdBytes int    `json:"threshold_bytes"`
	// ReadPrefixes are the key prefixes a payload_ref may name (ir.ClaimCheckReadPrefixes).
	ReadPrefixes []string `json:"read_prefixes"`
}

// Events configures completion events.
type Events struct {
	Bus        string `json:"bus"`
	BusModel   string `json:"bus_model"`
	MaxEntries int    `json:"max_entries"`
	// FillOrder is the rule every emitted detail is built by: for each declared property, the
	// sources tried in order, the first that has a value wins (FillOrder's value).
	FillOrder []string `json:"fill_order"`
	Emits     []Emit   `json:"emits"`
}

// Fill sources of an emitted detail's property (Events.FillOrder).
const (
	// FillWorker: agent_class, trace_id, traceparent, result/result_ref (EmitDetail.WorkerFields),
	// which no handler result and no consumed detail can override.
	FillWorker = "worker"
	// FillOutput: the handler result's top-level property of the same name, when the result is
	// an object and the class's output declares it (EmitDetail.FromOutput).
	FillOutput = "output"
	// FillCarried: the consumed detail's property of the same name (EmitDetail.Carry).
	FillCarried = "carried"
)

// FillOrder is the one fill rule fleetc writes and fleet-worker follows.
func FillOrder() []string { return []string{FillWorker, FillOutput, FillCarried} }

// Output is the contract of the handler's result (agents.<class>.output): fleet-worker
// validates every result against Schema before anything else happens, and refuses one larger
// than MaxBytes.
type Output struct {
	Schema   Document `json:"schema"`
	MaxBytes int      `json:"max_bytes"`
}

// Emit is one event the class publishes on completion.
type Emit struct {
	DetailType string     `json:"detail_type"`
	Source     string     `json:"source"`
	Version    int        `json:"version"`
	Detail     EmitDetail `json:"detail"`
}

// EmitDetail is how the worker builds the event's detail, and the contract it checks the
// detail against before PutEvents (docs/concepts.md "Completion events").
type EmitDetail struct {
	// Carry are the declared properties copied from the consumed detail when present there.
	Carry []string `json:"carry"`
	// WorkerFields are written by the worker: agent_class, trace_id, traceparent, result
	// (result or result_ref, by the output's size).
	WorkerFields []string `json:"worker_fields"`
	// FromOutput are the declared properties the handler result fills (the class's output
	// declares them too); each is also carried when the result leaves it out.
	FromOutput []string `json:"from_output,omitempty"`
	// Schema is the event's detail JSON Schema, as the spec declares it.
	Schema Document `json:"schema"`
}

// Document is an embedded JSON document, kept compact so that it compares and hashes the
// same however the file around it was indented.
type Document []byte

// MarshalJSON writes the document as it is.
func (d Document) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("null"), nil
	}
	return d, nil
}

// UnmarshalJSON keeps a compact copy of the document.
func (d *Document) UnmarshalJSON(b []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	*d = buf.Bytes()
	return nil
}

// Handler is how a step runs. Only the fields of its Type are written (the schema closes the
// object per type; see MarshalJSON).
type Handler struct {
	Type    string   `json:"type"`
	Command []string `json:"command,omitempty"`
	// InheritEnv names the worker's variables an exec command also receives (handler.inherit_env).
	InheritEnv []string `json:"inherit_env,omitempty"`
	// Secrets are variables the exec command receives, read by the worker at start from
	// the secret or parameter each names (handler.secrets): references, never values.
	Secrets   map[string]APIKey `json:"secrets,omitempty"`
	URL       string            `json:"url,omitempty"`
	System    string            `json:"system,omitempty"`
	Tools     []string          `json:"tools,omitempty"`
	MaxTokens int               `json:"max_tokens,omitempty"`
	// MaxIterations caps the llm handler's tool-use loop (0 = its default, 8).
	MaxIterations int `json:"max_iterations,omitempty"`
}

// MarshalJSON writes type plus exactly the fields the schema requires for that type: an llm
// handler's empty system prompt and tool list must appear, an exec handler's url must not.
func (h Handler) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": h.Type}
	switch h.Type {
	case HandlerExec:
		m["command"] = h.Command
		if len(h.InheritEnv) > 0 {
			m["inherit_env"] = h.InheritEnv
		}
		if len(h.Secrets) > 0 {
			m["secrets"] = h.Secrets
		}
	case HandlerHTTP:
		m["url"] = h.URL
	case HandlerLLM:
		tools := h.Tools
		if tools == nil {
			tools = []string{}
		}
		m["system"], m["tools"], m["max_tokens"] = h.System, tools, h.MaxTokens
		if h.MaxIterations > 0 {
			m["max_iterations"] = h.MaxIterations
		}
	default:
		return nil, fmt.Errorf("unknown handler type %q", h.Type)
	}
	return json.Marshal(m)
}

// Models is the router section: the class's policy and every policy its fallbacks reach.
type Models struct {
	Policy string `json:"policy"`
	// Allowed are the policies an event's model_policy may pick, the default first; empty
	// means the default only.
	Allowed  []string               `json:"allowed,omitempty"`
	Policies map[string]ModelPolicy `json:"policies"`
}

// ModelPolicy is one routing policy.
type ModelPolicy struct {
	Targets         []string `json:"targets"`
	Fallbacks       []string `json:"fallbacks"`
	Retries         int      `json:"retries"`
	TimeoutSeconds  int64    `json:"timeout_seconds"`
	AllowedFails    int      `json:"allowed_fails"`
	CooldownSeconds int64    `json:"cooldown_seconds"`
	MaxInFlight     int      `json:"max_in_flight"`
	TokensPerMinute int      `json:"tokens_per_minute"`
	// OpenAI-compatible targets (openai/<model>): the endpoint and the name of the
	// environment variable holding its API key (never the key itself).
	BaseURL   string `json:"base_url,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// APIKey is where the worker reads that key in AWS when the variable is unset (a
	// deployed function): a reference, never the key.
	APIKey *APIKey `json:"api_key,omitempty"`
	// ContextWindowFallbacks are tried when a target reports that the input exceeds its
	// context window.
	ContextWindowFallbacks []string `json:"context_window_fallbacks,omitempty"`
	// Processes is the most worker processes that share this policy's fleet-wide
	// max_in_flight and tokens_per_minute (the sum of scaling.max of the classes that can
	// reach it); each process enforces its share. Omitted when 1.
	Processes int `json:"processes,omitempty"`
}

// APIKey references a model API key: exactly one of Secret (a Secrets Manager secret's
// name or ARN, JSONKey picking a field of its JSON string) and SSM (a SecureString
// parameter's name or ARN).
type APIKey struct {
	Secret  string `json:"secret,omitempty"`
	JSONKey string `json:"json_key,omitempty"`
	SSM     string `json:"ssm,omitempty"`
}

// Timeout as a duration.
func (p ModelPolicy) Timeout() time.Duration { return seconds(p.TimeoutSeconds) }

// Cooldown as a duration.
func (p ModelPolicy) Cooldown() time.Duration { return seconds(p.CooldownSeconds) }

// Telemetry names the service and the metrics listener.
type Telemetry struct {
	ServiceName string `json:"service_name"`
	MetricsAddr string `json:"metrics_addr"` // empty = no listener
}

func seconds(n int64) time.Duration { return time.Duration(n) * time.Second }

// Marshal returns the canonical bytes of c: JSON with keys sorted at every level (struct field
// order cannot leak into the file), two-space indent, no HTML escaping, trailing newline.
func Marshal(c *Config) ([]byte, error) { return genjson.Canonical(c) }

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// Schema returns the compiled runtime config schema.
func Schema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		raw, err := schemas.FS.ReadFile(SchemaFile)
		if err != nil {
			schemaErr = fmt.Errorf("runtime config schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		if err := c.AddResource(SchemaID, bytes.NewReader(raw)); err != nil {
			schemaErr = fmt.Errorf("runtime config schema: %w", err)
			return
		}
		schema, schemaErr = c.Compile(SchemaID)
	})
	return schema, schemaErr
}

// Error lists every problem found in a config, sorted, each prefixed by its
// JSON pointer, so one run shows everything to fix.
type Error struct {
	Path     string
	Problems []string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid runtime config %s:", e.Path)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}

// Parse validates raw (named name in errors) against the schema and the cross-field rules,
// and decodes it. Every problem is reported at once.
func Parse(name string, raw []byte) (*Config, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, &Error{Path: name, Problems: []string{"not JSON: " + err.Error()}}
	}
	if dec.More() {
		return nil, &Error{Path: name, Problems: []string{"trailing data after the JSON document"}}
	}
	sch, err := Schema()
	if err != nil {
		return nil, err
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, &Error{Path: name, Problems: leafProblems(ve)}
		}
		return nil, &Error{Path: name, Problems: []string{err.Error()}}
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &Error{Path: name, Problems: []string{err.Error()}}
	}
	if probs := c.Check(); len(probs) > 0 {
		return nil, &Error{Path: name, Problems: probs}
	}
	return &c, nil
}

// leafProblems flattens a validation error tree into sorted, deduplicated
// "pointer: message" lines; the leaves carry the useful messages.
func leafProblems(ve *jsonschema.ValidationError) []string {
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			seen[loc+": "+e.Message] = true
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	out := slices.Sorted(maps.Keys(seen))
	return out
}

// checkAsyncTools: every "async:<class>" tool of an llm handler has its class in
// async_tools, and async_tools is usable; a config that names async tools the worker cannot
// run is refused before the first step.
func (c *Config) checkAsyncTools() []string {
	var p []string
	if c.AsyncTools != nil {
		for _, q := range c.AsyncTools.Check() {
			p = append(p, "/async_tools"+q)
		}
	}
	if c.Handler.Type != HandlerLLM {
		if c.AsyncTools != nil {
			p = append(p, "/async_tools: only an llm handler runs async tools")
		}
		return p
	}
	for i, t := range c.Handler.Tools {
		class, ok, err := ParseAsyncTool(t)
		switch {
		case !ok:
		case err != nil:
			p = append(p, fmt.Sprintf("/handler/tools/%d: %v", i, err))
		case c.AsyncTools == nil || c.AsyncTools.Only([]string{class}) == nil:
			p = append(p, fmt.Sprintf("/handler/tools/%d: async class %q is not in async_tools", i, class))
		}
	}
	return p
}

// Check returns the problems a JSON Schema cannot express (cross-field rules), sorted; the
// worker refuses to start on any of them.
func (c *Config) Check() []string {
	var p []string
	q := c.Queue
	if q.FIFO != strings.HasSuffix(q.Name, ".fifo") {
		p = append(p, "/queue/name: a FIFO queue name ends in .fifo and only a FIFO queue's does")
	}
	if q.FIFO != strings.HasSuffix(q.DLQName, ".fifo") {
		p = append(p, "/queue/dlq_name: the DLQ of a FIFO queue must be FIFO too (and of a standard queue, standard)")
	}
	if !q.FIFO && q.GroupBy != "" {
		p = append(p, "/queue/group_by: only FIFO queues have message groups")
	}
	if q.HeartbeatSeconds > 0 && q.HeartbeatSeconds >= q.VisibilityTimeoutSeconds {
		p = append(p, fmt.Sprintf("/queue/heartbeat_seconds: %d must be below visibility_timeout_seconds %d, or the message reappears between heartbeats", q.HeartbeatSeconds, q.VisibilityTimeoutSeconds))
	}
	if q.HeartbeatSeconds == 0 && c.Step.MaxSeconds > q.VisibilityTimeoutSeconds {
		p = append(p, fmt.Sprintf("/step/max_seconds: %d exceeds visibility_timeout_seconds %d with no heartbeat; a slow step would be delivered twice", c.Step.MaxSeconds, q.VisibilityTimeoutSeconds))
	}
	if lambdaMax := int64(awslimits.LambdaMaxTimeout / time.Second); c.Runtime == RuntimeLambda && c.Step.MaxSeconds > lambdaMax {
		p = append(p, fmt.Sprintf("/step/max_seconds: %d exceeds Lambda's %d s limit", c.Step.MaxSeconds, lambdaMax))
	}
	if c.Step.P95Seconds > c.Step.MaxSeconds {
		p = append(p, "/step/p95_seconds: above max_seconds")
	}
	if c.Retry.BaseMS > c.Retry.CapMS {
		p = append(p, "/retry/base_ms: above cap_ms")
	}
	if c.Events.BusModel == "classic" && c.Events.MaxEntries > awslimits.PutEventsMaxEntriesClassic {
		p = append(p, fmt.Sprintf("/events/max_entries: a classic bus takes at most %d entries per PutEvents", awslimits.PutEventsMaxEntriesClassic))
	}
	if len(c.Events.Emits) > 0 && c.Events.Bus == "" {
		p = append(p, "/events/bus: required when events.emits is not empty")
	}
	if c.Models.Policy != "" {
		if _, ok := c.Models.Policies[c.Models.Policy]; !ok {
			p = append(p, fmt.Sprintf("/models/policy: %q is not in models.policies", c.Models.Policy))
		}
	}
	for i, a := range c.Models.Allowed {
		if _, ok := c.Models.Policies[a]; !ok {
			p = append(p, fmt.Sprintf("/models/allowed/%d: %q is not in models.policies", i, a))
		}
		if i == 0 && a != c.Models.Policy {
			p = append(p, fmt.Sprintf("/models/allowed/0: %q must be the default policy %q", a, c.Models.Policy))
		}
	}
	for i, e := range c.Events.Emits {
		for _, f := range e.Detail.FromOutput {
			if !slices.Contains(e.Detail.Carry, f) {
				p = append(p, fmt.Sprintf("/events/emits/%d/detail/from_output: %q is not a declared property (carry)", i, f))
			}
		}
		if len(e.Detail.FromOutput) > 0 && c.Output == nil {
			p = append(p, fmt.Sprintf("/events/emits/%d/detail/from_output: needs the output section", i))
		}
	}
	names := slices.Sorted(maps.Keys(c.Models.Policies))
	for _, n := range names {
		mp := c.Models.Policies[n]
		for _, f := range mp.Fallbacks {
			if _, ok := c.Models.Policies[f]; !ok {
				p = append(p, fmt.Sprintf("/models/policies/%s/fallbacks: %q is not in models.policies", n, f))
			}
		}
		for _, f := range mp.ContextWindowFallbacks {
			if _, ok := c.Models.Policies[f]; !ok {
				p = append(p, fmt.Sprintf("/models/policies/%s/context_window_fallbacks: %q is not in models.policies", n, f))
			}
		}
		for _, t := range mp.Targets {
			if strings.HasPrefix(t, "openai/") && mp.BaseURL == "" {
				p = append(p, fmt.Sprintf("/models/policies/%s/base_url: required for target %q", n, t))
			}
		}
	}
	if c.Jobs != nil && c.Jobs.Table == c.Idempotency.Table {
		// The tables' keys differ (pk vs pk+sk): sharing one would fail every job write.
		p = append(p, "/jobs/table: must differ from idempotency.table")
	}
	if c.Handler.Type == HandlerLLM && c.Models.Policy == "" {
		p = append(p, "/handler: an llm handler needs models.policy")
	}
	p = append(p, c.checkAsyncTools()...)
	sort.Strings(p)
	return p
}
