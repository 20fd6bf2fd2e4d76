// Package config loads and validates a fleet-worker runtime config
// (runtime/<class>.json, format_version 1) written by `fleetc build`.
//
// A config is checked against schemas/runtime-config.schema.json and a few
// cross-field rules before the worker touches any message, so a bad config
// is a startup error, never a half-running worker.
package config

import (
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/fleetc/fleetc/schemas/contract"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// FormatVersion is the only runtime config format this worker reads.
const FormatVersion = rc.FormatVersion

// SchemaID is the $id of the runtime config JSON Schema.
const SchemaID = rc.SchemaID

// Runtime names.
const (
	RuntimeEKS       = rc.RuntimeEKS
	RuntimeLambda    = rc.RuntimeLambda
	RuntimeAgentCore = rc.RuntimeAgentCore
)

// AgentCorePort is where fleet-worker listens in an agentcore container.
const AgentCorePort = rc.AgentCorePort

// Handler types.
const (
	HandlerExec = rc.HandlerExec
	HandlerHTTP = rc.HandlerHTTP
	HandlerLLM  = rc.HandlerLLM
)

// Fill sources of an emitted detail (events.fill_order).
const (
	FillWorker  = rc.FillWorker
	FillOutput  = rc.FillOutput
	FillCarried = rc.FillCarried
)

// Config is a runtime config as the worker runs it: the file's contents (the shared format
// types) plus what the environment resolves.
type Config struct {
	File

	// Resolved from the environment by ApplyEnv (or looked up by queue name); never in the file.
	QueueURL string
	DLQURL   string
}

// The format's types, under the names the worker's packages use.
type (
	File        = rc.Config // runtime/<class>.json as written
	Queue       = rc.Queue
	Step        = rc.Step
	Retry       = rc.Retry
	Idempotency = rc.Idempotency
	Jobs        = rc.Jobs
	Fairness    = rc.Fairness
	ClaimCheck  = rc.ClaimCheck
	Events      = rc.Events
	Emit        = rc.Emit
	EmitDetail  = rc.EmitDetail
	Output      = rc.Output
	Document    = rc.Document
	Handler     = rc.Handler
	Models      = rc.Models
	ModelPolicy = rc.ModelPolicy
	APIKey      = rc.APIKey
	Telemetry   = rc.Telemetry
	// Error lists every problem found in a config, each prefixed by its JSON pointer.
	Error = rc.Error
)

// Load reads and validates path.
func Load(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read runtime config: %w", err)
	}
	return Parse(path, raw)
}

// Parse validates raw (named name in errors) against the schema and the format's cross-field
// rules, and decodes it.
func Parse(name string, raw []byte) (*Config, error) {
	c, err := rc.Parse(name, raw)
	if err != nil {
		return nil, err
	}
	return &Config{File: *c}, nil
}

// Environment variables that override config values.
const (
	EnvQueueURL        = contract.EnvQueueURL
	EnvDLQURL          = contract.EnvDLQURL
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
	// The AgentCore dispatcher's runtime (Terraform sets it) and, for tests, its endpoint.
	EnvAgentRuntimeARN = contract.EnvAgentRuntimeARN
	EnvAgentCoreURL    = "FLEET_AGENTCORE_ENDPOINT"
	// The async tools' config (--mode tools): the document itself (the generated Lambda
	// function) or a path to it.
	EnvToolsJSON   = "FLEET_TOOLS_JSON"
	EnvToolsConfig = "FLEET_TOOLS_CONFIG"
)

// Environment variables that stand in for fleet-worker's flags where a runtime cannot pass
// arguments: Lambda and AgentCore get their config's object in FLEET_CONFIG_S3 (object.go),
// AgentCore its mode in FLEET_MODE.
const (
	EnvConfigJSON = "FLEET_CONFIG_JSON" // the runtime config itself, when --config is absent
	EnvConfigPath = "FLEET_CONFIG"      // a path to it, when --config is absent
	EnvMode       = contract.EnvMode    // poll | lambda | agentcore | dispatch, when --mode is absent
)

// Env lists every FLEET_* variable fleet-worker reads; the compiler's tests hold generated
// infrastructure to it.
func Env() []string {
	return []string{EnvQueueURL, EnvDLQURL, EnvClaimCheck, EnvEventBus, EnvIdempotency, EnvMetricsAddr,
		EnvHandlerURL, EnvConcurrency, EnvVisibilitySecs, EnvHeartbeatSecs, EnvWaitTimeSeconds,
		EnvConfigJSON, EnvConfigPath, EnvMode, EnvModelGatewayAddr, EnvBedrockEndpoint, EnvAgentRuntimeARN, EnvAgentCoreURL,
		EnvToolsJSON, EnvToolsConfig, EnvConfigS3, EnvToolsS3}
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
	num := func(key string, min int64) (int64, bool) {
		v := getenv(key)
		if v == "" {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min || strconv.FormatInt(n, 10) != v {
			probs = append(probs, fmt.Sprintf("%s=%q: want an integer >= %d", key, v, min))
			return 0, false
		}
		return n, true
	}
	if n, ok := num(EnvConcurrency, 1); ok {
		c.Concurrency = int(n)
	}
	for key, dst := range map[string]*int64{
		EnvVisibilitySecs:  &c.Queue.VisibilityTimeoutSeconds,
		EnvHeartbeatSecs:   &c.Queue.HeartbeatSeconds,
		EnvWaitTimeSeconds: &c.Queue.WaitTimeSeconds,
	} {
		if n, ok := num(key, 0); ok {
			*dst = n
		}
	}
	if c.Queue.WaitTimeSeconds > 20 {
		probs = append(probs, fmt.Sprintf("%s: at most 20", EnvWaitTimeSeconds))
	}
	probs = append(probs, c.Check()...)
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
