package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/openai"
	"github.com/fleetc/fleetc/runtime/wire"
)

// failure is how one kind of failure answers in each wire format: the OpenAI status,
// error type and code; the Converse status and X-Amzn-ErrorType as the Bedrock Runtime
// API reference lists them; the event-stream exception a committed stream ends with; and
// whether it is final (x-should-retry: false, which the openai and Anthropic SDKs honour,
// so their own retries do not multiply a final answer).
type failure struct {
	status          int
	openaiType      string
	code            string
	bedrockStatus   int
	bedrockType     string
	streamException string
	final           bool
}

// failures maps the router's step codes onto both wire formats: docs/model-gateway.md's
// error table, row for row.
var failures = map[wire.Code]failure{
	router.CodeSpendLimit: {status: 429, openaiType: openai.InsufficientQuota, code: openai.InsufficientQuota,
		bedrockStatus: 400, bedrockType: "ServiceQuotaExceededException", streamException: "serviceUnavailableException", final: true},
	router.CodeContextWindow: {status: 400, openaiType: "invalid_request_error", code: "context_length_exceeded",
		bedrockStatus: 400, bedrockType: "ValidationException", streamException: "validationException", final: true},
	router.CodeModelRejected: {status: 400, openaiType: "invalid_request_error", code: "model_request_rejected",
		bedrockStatus: 400, bedrockType: "ValidationException", streamException: "validationException", final: true},
	router.CodeUnknownPolicy: {status: 404, openaiType: "invalid_request_error", code: "model_not_found",
		bedrockStatus: 404, bedrockType: "ResourceNotFoundException", streamException: "validationException", final: true},
	router.CodeStepDeadline: {status: 408, openaiType: "timeout", code: "timeout",
		bedrockStatus: 408, bedrockType: "ModelTimeoutException", streamException: "modelStreamErrorException", final: true},
	router.CodeModelUnavailable: {status: 503, openaiType: "server_error", code: "model_unavailable",
		bedrockStatus: 503, bedrockType: "ServiceUnavailableException", streamException: "serviceUnavailableException"},
	router.CodeMidStream: {status: 502, openaiType: "server_error", code: "model_stream_interrupted",
		bedrockStatus: 500, bedrockType: "ModelStreamErrorException", streamException: "modelStreamErrorException"},
}

// throttled is a ModelUnavailable the router marks a throttle (retry.Error.Throttle: every
// deployment is away for a rate limit or overload, and it names when the first is back):
// OpenAI's rate-limit 429 (type "requests", code rate_limit_exceeded), which the openai SDKs
// raise as RateLimitError after retrying on the retry-after, and Bedrock's ThrottlingException.
var throttled = failure{status: 429, openaiType: "requests", code: openai.RateLimitExceeded,
	bedrockStatus: 429, bedrockType: "ThrottlingException", streamException: "throttlingException"}

// internal is any other failure (the router returns none today).
var internal = failure{status: 500, openaiType: "server_error", code: "model_error", bedrockStatus: 500, bedrockType: "InternalServerException", streamException: "internalServerException"}

// Request failures, before any routing.
var (
	badRequest   = failure{status: 400, openaiType: "invalid_request_error", code: "invalid_request", bedrockStatus: 400, bedrockType: "ValidationException", final: true}
	notFound     = failure{status: 404, openaiType: "invalid_request_error", code: "not_found", bedrockStatus: 404, bedrockType: "UnknownOperationException", final: true}
	unauthorized = map[api]failure{
		apiOpenAI:   {status: 401, openaiType: "invalid_request_error", code: "invalid_api_key", final: true},
		apiConverse: {bedrockStatus: 403, bedrockType: "UnrecognizedClientException", final: true},
	}
)

// classify is the router error's failure and its retry-after: the router's own (the real
// wait until a deployment is back), none when it names none or the failure is final.
func classify(err error) (failure, time.Duration) {
	var ov *overloaded
	if errors.As(err, &ov) { // admission control: a throttle, with the wait it estimated
		return throttled, ov.retryAfter
	}
	var re *retry.Error
	if !errors.As(err, &re) {
		return internal, 0
	}
	f, ok := failures[re.Code]
	switch {
	case !ok:
		return internal, 0
	case f.final || re.RetryAfter <= 0:
		return f, 0
	case re.Throttle:
		return throttled, re.RetryAfter
	}
	return f, re.RetryAfter
}

func (g *Gateway) routeError(w http.ResponseWriter, a api, err error) {
	f, ra := classify(err)
	msg := err.Error()
	if f.code == "context_length_exceeded" && a == apiConverse {
		msg = "Input is too long for requested model. " + msg // Bedrock's wording, which Converse clients match
	}
	g.fail(w, a, f, msg, ra)
}

// fail answers a failure in a's wire format.
func (g *Gateway) fail(w http.ResponseWriter, a api, f failure, msg string, ra time.Duration) {
	h := w.Header()
	if ra > 0 {
		// Retry-After and retry-after-ms (which the openai SDKs read first), rounded up.
		retry.SetRetryAfterHeaders(h, ra)
	}
	h.Set("X-Should-Retry", strconv.FormatBool(!f.final))
	h.Set("Content-Type", "application/json")
	if a == apiConverse {
		st := f.bedrockStatus
		if st == 0 {
			st = f.status
		}
		h.Set("X-Amzn-ErrorType", f.bedrockType)
		w.WriteHeader(st)
		writeBody(w, map[string]string{"message": msg})
		return
	}
	st := f.status
	if st == 0 {
		st = f.bedrockStatus
	}
	var eb openai.ErrorBody
	eb.Error.Type, eb.Error.Code, eb.Error.Message = f.openaiType, f.code, msg
	w.WriteHeader(st)
	writeBody(w, eb)
}
