// Package gatewayenv names the environment variables through which fleet-worker hands its
// model gateway to exec handlers. It imports only schemas/contract (which imports nothing of
// fleetc), so a handler (fleetc dev's stand-in among them) reads them without linking the
// gateway and the model router.
package gatewayenv

import "github.com/fleetc/fleetc/schemas/contract"

const (
	// URL is the OpenAI-compatible base URL (ends in /v1): OPENAI_BASE_URL for most clients.
	URL = contract.EnvGatewayURL
	// BedrockURL is the root URL for Bedrock Converse clients
	// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME for the AWS SDKs).
	BedrockURL = contract.EnvGatewayBedrockURL
	// Token is the bearer token every request must carry (OPENAI_API_KEY for the
	// openai SDKs, AWS_BEARER_TOKEN_BEDROCK for the AWS SDKs).
	Token = contract.EnvGatewayToken
)
