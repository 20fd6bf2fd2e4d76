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
	// Throttle is runtime/retry's reading of the answer: a 429, 503 or 529 that named its
	// retry-after says "too much, come back then", not "broken".
	Throttle bool
	// Quota marks a provider saying the account's quota is spent (OpenAI
	// insufficient_quota): the spend limit, final even if a retry-after came with it.
	Quota bool
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

// FromHTTP builds a ProviderError from an HTTP answer (header may be nil). The retry-after
// is retry-after-ms (OpenAI, Anthropic and proxies in front of them) before Retry-After.
func FromHTTP(status int, header http.Header, code, message string) *ProviderError {
	e := &ProviderError{Status: status, Code: code, Message: message}
	if header != nil {
		e.RetryAfter, e.HasRetryAfter = retry.RetryAfterHeaders(header, time.Now())
		e.Throttle = retry.FromResponse(status, header, "").Throttle
	}
	return e
}

// pause is what a failed answer says about coming back: the server's retry-after (named:
// it sent one) and whether the failure was a throttle (a rate limit or an overload that
// clears by itself) rather than an outage.
type pause struct {
	after    time.Duration
	named    bool
	throttle bool
}

func pauseOf(err error) pause {
	var pe *ProviderError
	if !errors.As(err, &pe) {
		return pause{}
	}
	return pause{after: pe.RetryAfter, named: pe.HasRetryAfter, throttle: pe.Throttle || pe.RateLimited}
}

// bench is how long a deployment over allowed_fails is kept away: for a throttle that named
// its retry-after, that retry-after, shorter or longer than the cooldown (the server knows
// when its limit resets; a call before then only earns another 429, and benching past it
// wastes a deployment that could answer); otherwise the policy's cooldown, the router's guess.
// A policy without a cooldown benches nothing (the retry-after alone still holds).
func (p pause) bench(cooldown time.Duration) time.Duration {
	if cooldown > 0 && p.throttle && p.named {
		return p.after
	}
	return cooldown
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
func classify(err error, callCtx context.Context) class {
	var pe *ProviderError
	if errors.As(err, &pe) {
		switch {
		case pe.ContextWindow:
			return classContextWindow
		case pe.Status == http.StatusTooManyRequests && (pe.Quota || !pe.HasRetryAfter && !pe.RateLimited):
			return classSpendLimit
		case pe.Status == 0 || pe.Transient || retryableStatus(pe.Status):
			if pe.Status == 0 && callCtx.Err() != nil {
				return classTimeout
			}
			return classRetryable
		default:
			return classPermanent
		}
	}
	if callCtx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return classTimeout
	}
	return classRetryable // no answer at all: the seed retries a failure without status
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
	}
	return e
}

// exhausted is the error when every group of chain failed retryably. When no deployment of
// the chain (fallbacks included) may be called now, it carries the real wait until the
// first comes back (its remaining cooldown or retry-after), and if a throttle is what keeps
// that one away it is a retry.Throttled: a delay the worker waits out without counting a
// failure. Otherwise (an outage) it stays a retryable ModelUnavailable, carrying the wait
// only when every deployment is benched: before then the router would not call any.
func exhausted(chain []*group, c class, last error, policy string, now time.Time) *retry.Error {
	e := stepError(c, last, policy)
	wait, throttle := comeback(chain, now)
	if wait <= 0 {
		return e
	}
	if !throttle {
		e.RetryAfter = wait
		return e
	}
	t := retry.Throttled(CodeModelUnavailable, wait,
		fmt.Errorf("policy %s: rate limited; the first call can go in %s (last: %w)", policy, wait.Round(time.Millisecond), last))
	t.Status = e.Status
	return t
}

// routeError is an in-router failure that made no call (cap wait, budget, cooldowns).
type routeError struct{ code, msg string }

func (e *routeError) Error() string { return e.code + ": " + e.msg }
