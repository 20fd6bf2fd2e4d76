// Package config loads and validates a fleet-worker runtime config
// (runtime/<class>.json, format_version 1) written by `fleetc build`.
//
// A config is checked against schemas/runtime-config.schema.json and a few
// cross-field rules before the worker touches any message, so a bad config
// is a startup error, never a half-running worker.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/schemas"
)

// FormatVersion is the only runtime config format this worker reads.
const FormatVersion = 1

// SchemaID is the $id of the runtime config JSON Schema.
const SchemaID = "https://fleetc.dev/schemas/runtime-config.schema.json"

const schemaFile = "runtime-config.schema.json"

// Runtime names.
const (
	RuntimeEKS       = "eks"
	RuntimeLambda    = "lambda"
	RuntimeAgentCore = "agentcore"
)

// Handler types.
const (
	HandlerExec = "exec"
	HandlerHTTP = "http"
	HandlerLLM  = "llm"
)

// Config mirrors runtime/<class>.json.
type Config struct {
	FormatVersion int         `json:"format_version"`
	Fleet         string      `json:"fleet"`
	Class         string      `json:"class"`
	Region        string      `json:"region"`
	Runtime       string      `json:"runtime"`
	Queue         Queue       `json:"queue"`
	Concurrency   int         `json:"concurrency"`
	Step          Step        `json:"step"`
	Retry         Retry       `json:"retry"`
	Idempotency   Idempotency `json:"idempotency"`
	Jobs          *Jobs       `json:"jobs,omitempty"`
	ClaimCheck    ClaimCheck  `json:"claim_check"`
	Events        Events      `json:"events"`
	Handler       Handler     `json:"handler"`
	Models        Models      `json:"models"`
	Telemetry     Telemetry   `json:"telemetry"`

	// Resolved from the environment by ApplyEnv; never in the file.
	QueueURL string `json:"-"`
	DLQURL   string `json:"-"`
}

// Queue is the SQS side of a class.
type Queue struct {
	Name                     string `json:"name"`
	DLQName                  string `json:"dlq_name"`
	FIFO                     bool   `json:"fifo"`
	GroupBy                  string `json:"group_by"`
	VisibilityTimeoutSeconds int    `json:"visibility_timeout_seconds"`
	HeartbeatSeconds         int    `json:"heartbeat_seconds"`
	WaitTimeSeconds          int    `json:"wait_time_seconds"`
	MaxMessages              int    `json:"max_messages"`
	MaxReceives              int    `json:"max_receives"`
}

// VisibilityTimeout as a duration.
func (q Queue) VisibilityTimeout() time.Duration {
	return time.Duration(q.VisibilityTimeoutSeconds) * time.Second
}

// Heartbeat as a duration (0 = off).
func (q Queue) Heartbeat() time.Duration { return time.Duration(q.HeartbeatSeconds) * time.Second }

// Step bounds one handler call.
type Step struct {
	P95Seconds int `json:"p95_seconds"`
	MaxSeconds int `json:"max_seconds"`
}

// Max as a duration.
func (s Step) Max() time.Duration { return time.Duration(s.MaxSeconds) * time.Second }

// Retry is the queue-level retry policy (full jitter).
type Retry struct {
	MaxAttempts int `json:"max_attempts"`
	BaseMS      int `json:"base_ms"`
	CapMS       int `json:"cap_ms"`
}

// Base as a duration.
func (r Retry) Base() time.Duration { return time.Duration(r.BaseMS) * time.Millisecond }

// Cap as a duration.
func (r Retry) Cap() time.Duration { return time.Duration(r.CapMS) * time.Millisecond }

// Idempotency names the DynamoDB table and how keys are built.
type Idempotency struct {
	Table         string   `json:"table"`
	WindowSeconds int      `json:"window_seconds"`
	Key           []string `json:"key"`
}

// Window as a duration.
func (i Idempotency) Window() time.Duration { return time.Duration(i.WindowSeconds) * time.Second }

// Jobs is the async-tool job record (pk "JOB#<id>") the worker moves RUNNING -> SUCCEEDED |
// FAILED; nil for classes that are not async tools.
type Jobs struct {
	Table                  string `json:"table"`
	IDField                string `json:"id_field"`
	StatusPollAfterSeconds int    `json:"status_poll_after_seconds"`
}

// StatusPollAfter as a duration.
func (j Jobs) StatusPollAfter() time.Duration {
	return time.Duration(j.StatusPollAfterSeconds) * time.Second
}

// ClaimCheck configures S3 offload of large payloads.
type ClaimCheck struct {
	Bucket         string `json:"bucket"`
	ThresholdBytes int    `json:"threshold_bytes"`
}

// Events configures completion events.
type Events struct {
	Bus        string `json:"bus"`
	BusModel   string `json:"bus_model"`
	MaxEntries int    `json:"max_entries"`
	Emits      []Emit `json:"emits"`
}

// Emit is one completion event the class publishes.
type Emit struct {
	DetailType string `json:"detail_type"`
	Source     string `json:"source"`
	Version    int    `json:"version"`
}

// Handler selects how a step runs.
type Handler struct {
	Type      string   `json:"type"`
	Command   []string `json:"command,omitempty"`
	URL       string   `json:"url,omitempty"`
	System    string   `json:"system,omitempty"`
	Tools     []string `json:"tools,omitempty"`
	MaxTokens int      `json:"max_tokens,omitempty"`
	// MaxIterations caps the llm handler's tool-use loop (0 = its default, 8).
	MaxIterations int `json:"max_iterations,omitempty"`
}

// Models is the router section (used by the llm handler).
type Models struct {
	Policy   string                 `json:"policy"`
	Policies map[string]ModelPolicy `json:"policies"`
}

// ModelPolicy is one routing policy.
type ModelPolicy struct {
	Targets         []string `json:"targets"`
	Fallbacks       []string `json:"fallbacks"`
	Retries         int      `json:"retries"`
	TimeoutSeconds  int      `json:"timeout_seconds"`
	AllowedFails    int      `json:"allowed_fails"`
	CooldownSeconds int      `json:"cooldown_seconds"`
	MaxInFlight     int      `json:"max_in_flight"`
	TokensPerMinute int      `json:"tokens_per_minute"`
	// OpenAI-compatible targets (openai/<model>): the endpoint and the name of the
	// environment variable holding its API key (never the key itself).
	BaseURL   string `json:"base_url,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Policies tried when a target reports that the input exceeds its context window.
	ContextWindowFallbacks []string `json:"context_window_fallbacks,omitempty"`
	// Processes is how many worker processes share max_in_flight and tokens_per_minute
	// (0 or 1: this process alone); each process enforces its share.
	Processes int `json:"processes,omitempty"`
}

// Telemetry configures service naming and the metrics listener.
type Telemetry struct {
	ServiceName string `json:"service_name"`
	MetricsAddr string `json:"metrics_addr"`
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

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// Schema returns the compiled runtime config schema.
func Schema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		raw, err := schemas.FS.ReadFile(schemaFile)
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

// Load reads and validates path.
func Load(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read runtime config: %w", err)
	}
	return Parse(path, raw)
}

// Parse validates raw (named name in errors) and decodes it.
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
	if probs := c.check(); len(probs) > 0 {
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

// check enforces the rules a JSON Schema cannot express.
func (c *Config) check() []string {
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
	if c.Runtime == RuntimeLambda && c.Step.MaxSeconds > 900 {
		p = append(p, fmt.Sprintf("/step/max_seconds: %d exceeds Lambda's 900 s limit", c.Step.MaxSeconds))
	}
	if c.Step.P95Seconds > c.Step.MaxSeconds {
		p = append(p, "/step/p95_seconds: above max_seconds")
	}
	if c.Retry.BaseMS > c.Retry.CapMS {
		p = append(p, "/retry/base_ms: above cap_ms")
	}
	if c.Events.BusModel == "classic" && c.Events.MaxEntries > 10 {
		p = append(p, "/events/max_entries: a classic bus takes at most 10 entries per PutEvents")
	}
	if len(c.Events.Emits) > 0 && c.Events.Bus == "" {
		p = append(p, "/events/bus: required when events.emits is not empty")
	}
	if c.Models.Policy != "" {
		if _, ok := c.Models.Policies[c.Models.Policy]; !ok {
			p = append(p, fmt.Sprintf("/models/policy: %q is not in models.policies", c.Models.Policy))
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
	sort.Strings(p)
	return p
}

// Environment variables that override config values.
const (
	EnvQueueURL        = "FLEET_QUEUE_URL"
	EnvDLQURL          = "FLEET_DLQ_URL"
	EnvClaimCheck      = "FLEET_CLAIM_CHECK_BUCKET"
	EnvEventBus        = "FLEET_EVENT_BUS"
	EnvIdempotency     = "FLEET_IDEMPOTENCY_TABLE"
	EnvMetricsAddr     = "FLEET_METRICS_ADDR"
	EnvHandlerURL      = "FLEET_HANDLER_URL"
	EnvRegion          = "AWS_REGION"
	EnvConcurrency     = "FLEET_CONCURRENCY"
	EnvVisibilitySecs  = "FLEET_VISIBILITY_TIMEOUT_SECONDS"
	EnvHeartbeatSecs   = "FLEET_HEARTBEAT_SECONDS"
	EnvWaitTimeSeconds = "FLEET_WAIT_TIME_SECONDS"
	// EnvModelGatewayAddr is the loopback address of the model gateway (default 127.0.0.1:0).
	EnvModelGatewayAddr = "FLEET_MODEL_GATEWAY_ADDR"
	// EnvBedrockEndpoint overrides the Bedrock Runtime endpoint (FLEET_AWS_ENDPOINT is not
	// used for Bedrock: emulators for the other services do not serve it).
	EnvBedrockEndpoint = "FLEET_BEDROCK_ENDPOINT"
)

// Environment variables that stand in for fleet-worker's flags where a runtime cannot pass
// arguments: Lambda gets its whole config in FLEET_CONFIG_JSON, AgentCore its mode in FLEET_MODE.
const (
	EnvConfigJSON = "FLEET_CONFIG_JSON" // the runtime config itself, when --config is absent
	EnvConfigPath = "FLEET_CONFIG"      // a path to it, when --config is absent
	EnvMode       = "FLEET_MODE"        // poll | lambda | agentcore, when --mode is absent
)

// Env lists every FLEET_* variable fleet-worker reads; the compiler's tests hold generated
// infrastructure to it.
func Env() []string {
	return []string{EnvQueueURL, EnvDLQURL, EnvClaimCheck, EnvEventBus, EnvIdempotency, EnvMetricsAddr,
		EnvHandlerURL, EnvConcurrency, EnvVisibilitySecs, EnvHeartbeatSecs, EnvWaitTimeSeconds,
		EnvConfigJSON, EnvConfigPath, EnvMode, EnvModelGatewayAddr, EnvBedrockEndpoint}
}

// ApplyEnv applies environment overrides (getenv is os.Getenv in main) and
// re-checks the cross-field rules, since overrides can break them.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	set := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	set(&c.QueueURL, EnvQueueURL)
	set(&c.DLQURL, EnvDLQURL)
	set(&c.ClaimCheck.Bucket, EnvClaimCheck)
	set(&c.Events.Bus, EnvEventBus)
	set(&c.Idempotency.Table, EnvIdempotency)
	set(&c.Telemetry.MetricsAddr, EnvMetricsAddr)
	set(&c.Region, EnvRegion)
	if v := getenv(EnvHandlerURL); v != "" && c.Handler.Type == HandlerHTTP {
		c.Handler.URL = v
	}
	var probs []string
	num := func(dst *int, key string, min int) {
		v := getenv(key)
		if v == "" {
			return
		}
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < min || fmt.Sprint(n) != v {
			probs = append(probs, fmt.Sprintf("%s=%q: want an integer >= %d", key, v, min))
			return
		}
		*dst = n
	}
	num(&c.Concurrency, EnvConcurrency, 1)
	num(&c.Queue.VisibilityTimeoutSeconds, EnvVisibilitySecs, 0)
	num(&c.Queue.HeartbeatSeconds, EnvHeartbeatSecs, 0)
	num(&c.Queue.WaitTimeSeconds, EnvWaitTimeSeconds, 0)
	if c.Queue.WaitTimeSeconds > 20 {
		probs = append(probs, fmt.Sprintf("%s: at most 20", EnvWaitTimeSeconds))
	}
	probs = append(probs, c.check()...)
	if len(probs) > 0 {
		sort.Strings(probs)
		return &Error{Path: "environment", Problems: probs}
	}
	return nil
}

// RetryLimit is the receive count at which the worker dead-letters a message
// itself: the smaller of retry.max_attempts and the redrive maxReceiveCount,
// so the worker, not a silent redrive, records why.
func (c *Config) RetryLimit() int {
	n := c.Retry.MaxAttempts
	if c.Queue.MaxReceives < n {
		n = c.Queue.MaxReceives
	}
	return n
}
