package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// ProviderError is a failed provider answer. Providers return it for every HTTP error
// so the router, not the provider, decides what happens next.
type ProviderError struct {
	Status        int           // HTTP status; 0 = no answer (connection error)
	Code          string        // provider error code or type, e.g. "ThrottlingException"
	Message       string        // provider message
	RetryAfter    time.Duration // the server's retry-after
	HasRetryAfter bool          // a retry-after header was present
	// RateLimited marks a 429 the provider itself names a rate limit (Bedrock's
	// ThrottlingException): retried even without retry-after.
	RateLimited bool
	// Transient marks an answer the provider documents as "try again" whatever its
	// status (Bedrock's ModelErrorException 424, ServiceQuotaExceededException 400).
	Transient     bool
	ContextWindow bool // the input does not fit the model's context window
	Err           error
}

func (e *ProviderError) Error() string {
	s := fmt.Sprintf("status %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Status == 0 && e.Err != nil {
		s = e.Err.Error()
	}
	return s
}

func (e *ProviderError) Unwrap() error { return e.Err }

// FromHTTP builds a ProviderError from an HTTP answer (header may be nil).
func FromHTTP(status int, header http.Header, code, message string) *ProviderError {
	e := &ProviderError{Status: status, Code: code, Message: message}
	if header != nil {
		e.RetryAfter, e.HasRetryAfter = retry.ParseRetryAfter(header.Get("Retry-After"), time.Now())
	}
	return e
}

// contextWindowWordings are how providers say the input does not fit, lower case:
// OpenAI and vLLM ("maximum context length is N tokens"), LiteLLM
// (ContextWindowExceededError), Anthropic directly or through a proxy ("prompt is too
// long", "input length and `max_tokens` exceed context limit"), Bedrock ("input is too
// long for requested model", "too many input tokens"), Bedrock's stop reason name.
var contextWindowWordings = []string{
	"context_length_exceeded", "maximum context length", "context window", "contextwindowexceeded",
	"exceed context limit", "prompt is too long", "input is too long", "too many input tokens",
	"context length", "model_context_window_exceeded",
}

// ContextWindowMessage reports whether an error message (or code) says the input does not
// fit the model's context window, in any provider's wording above.
func ContextWindowMessage(s string) bool {
	s = strings.ToLower(s)
	for _, w := range contextWindowWordings {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// class is how the router treats a failure.
type class int

const (
	classRetryable     class = iota // 408, 409, 429 + retry-after, 5xx, 529, no answer
	classTimeout                    // the per-call timeout fired
	classSpendLimit                 // 429 without retry-after: never retried
	classContextWindow              // input too long for the model
	classPermanent                  // other 4xx: retrying cannot help
)

func (c class) String() string {
	return [...]string{"retryable", "timeout", "spend_limit", "context_window", "permanent"}[c]
}

// countsAgainst says whether the failure is the deployment's fault (allowed_fails).
func (c class) countsAgainst() bool { return c == classRetryable || c == classTimeout }

// retryableStatus is the seed's list: 408, 409, 429 (with retry-after), 5xx, 529.
func retryableStatus(s int) bool {
	return s == 408 || s == 409 || s == 429 || (s >= 500 && s <= 599)
}

// classify sorts err; callCtx is the attempt's context (its deadline is the per-call timeout).
func classify(err error, callCtx context.Context) (class, time.Duration) {
	var pe *ProviderError
	if errors.As(err, &pe) {
		switch {
		case pe.ContextWindow:
			return classContextWindow, 0
		case pe.Status == http.StatusTooManyRequests && !pe.HasRetryAfter && !pe.RateLimited:
			return classSpendLimit, 0
		case pe.Status == 0 || pe.Transient || retryableStatus(pe.Status):
			if pe.Status == 0 && callCtx.Err() != nil {
				return classTimeout, 0
			}
			return classRetryable, pe.RetryAfter
		default:
			return classPermanent, 0
		}
	}
	if callCtx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return classTimeout, 0
	}
	return classRetryable, 0 // no answer at all: the seed retries a failure without status
}

// Error codes the router returns (as *retry.Error, so the worker's queue logic applies).
const (
	CodeSpendLimit        = wire.SpendLimit            // never retried: dead-lettered for a human
	CodeContextWindow     = wire.ContextWindowExceeded // no context-window fallback took it
	CodeModelUnavailable  = wire.ModelUnavailable      // every group failed; the queue retries the step
	CodeModelRejected     = wire.ModelRequestRejected  // a 4xx no retry can fix
	CodeStepDeadline      = wire.Timeout               // the step's deadline ran out during routing
	CodeUnknownPolicy     = wire.UnknownModelPolicy
	codeNoHealthy         = "NoHealthyDeployment"
	codeInFlightCap       = "InFlightCapWait"
	codeTokenBudget       = "TokenBudget"
	codeRetryAfterTooLong = "RetryAfterBeyondDeadline"
)

// stepError turns the final failure into the worker's *retry.Error.
func stepError(c class, err error, policy string) *retry.Error {
	msg := fmt.Sprintf("policy %s: %v", policy, err)
	e := &retry.Error{Message: msg, Err: err}
	var pe *ProviderError
	if errors.As(err, &pe) {
		e.Status = pe.Status
	}
	switch c {
	case classSpendLimit:
		e.Code = CodeSpendLimit
	case classContextWindow:
		e.Code = CodeContextWindow
	case classPermanent:
		e.Code = CodeModelRejected
	default:
		e.Code, e.Retryable = CodeModelUnavailable, true
		if pe != nil {
			e.RetryAfter = pe.RetryAfter
		}
	}
	return e
}

// routeError is an in-router failure that made no call (cap wait, budget, cooldowns).
type routeError struct{ code, msg string }

func (e *routeError) Error() string { return e.code + ": " + e.msg }
