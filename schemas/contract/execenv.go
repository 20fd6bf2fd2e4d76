package contract

import (
	"slices"
	"strings"
)

// The variables through which fleet-worker hands its model gateway to an exec command
// (runtime/router/gateway/gatewayenv re-exports them for handler code).
const (
	// EnvGatewayURL is the OpenAI-compatible base URL (ends in /v1): OPENAI_BASE_URL for most clients.
	EnvGatewayURL = "FLEET_MODEL_GATEWAY_URL"
	// EnvGatewayBedrockURL is the root URL for Bedrock Converse clients
	// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME for the AWS SDKs).
	EnvGatewayBedrockURL = "FLEET_MODEL_GATEWAY_BEDROCK_URL"
	// EnvGatewayToken is the bearer token every request must carry (OPENAI_API_KEY for the
	// openai SDKs, AWS_BEARER_TOKEN_BEDROCK for the AWS SDKs).
	EnvGatewayToken = "FLEET_MODEL_GATEWAY_TOKEN"
)

// ExecInheritedEnv are the worker's variables every exec command receives. Nothing else of
// the worker's environment reaches agent code unless the spec names it: the worker holds
// role credentials, the container-credential URI and token, and model API keys. The model
// gateway's URLs and token pass too: the command is what calls the gateway.
var ExecInheritedEnv = []string{"PATH", "HOME", "LANG", "TZ", EnvGatewayURL, EnvGatewayBedrockURL, EnvGatewayToken}

// ExecStepEnvPrefix starts the variables the worker sets per step (FLEET_CLASS, …);
// ExecTraceParentEnv carries the step's W3C trace context.
const (
	ExecStepEnvPrefix  = "FLEET_"
	ExecTraceParentEnv = "TRACEPARENT"
)

// The step's variables the worker sets (fleetc dev's handler wrapper reads them too).
const (
	ExecClassEnv   = ExecStepEnvPrefix + "CLASS"
	ExecKeyEnv     = ExecStepEnvPrefix + "IDEMPOTENCY_KEY"
	ExecTraceIDEnv = ExecStepEnvPrefix + "TRACE_ID"
	ExecAttemptEnv = ExecStepEnvPrefix + "ATTEMPT"
)

// ReservedExecEnv reports whether the worker sets variable name in an exec command's
// environment itself (ExecInheritedEnv, the step's FLEET_* variables, TRACEPARENT) or keeps
// it from the command (AWS_*: the worker's credentials): a handler secret may not take such
// a name (rule W009 and the worker at start ask this one function).
func ReservedExecEnv(name string) bool {
	return slices.Contains(ExecInheritedEnv, name) || name == ExecTraceParentEnv ||
		strings.HasPrefix(name, ExecStepEnvPrefix) || strings.HasPrefix(name, "AWS_")
}
