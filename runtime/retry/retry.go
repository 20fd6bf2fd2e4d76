// Package retry classifies step failures and computes backoff.
//
// The queue is the one retry layer (agent-reliability-is-queueing: "retry at
// a single point in the stack"): a retryable failure releases the message
// with a full-jitter delay, anything else is dead-lettered with its reason.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetc/fleetc/runtime/wire"
)

// Error is a classified step failure.
type Error struct {
	Code       wire.Code     // short machine code, e.g. "HTTP503", "Timeout", "SpendLimit"
	Message    string        // human detail
	Status     int           // HTTP-like status when there is one (0 = none)
	Retryable  bool          // false = dead-letter now
	RetryAfter time.Duration // server-advised delay (0 = none); overrides jitter
	// Throttle marks a dependency that named when to come back (a 429 or 503 with a
	// retry-after, the router's cooldown): a delay of RetryAfter, not a failure. The worker
	// holds the message through it without spending the class's failure budget, until the
	// step's or the run's deadline (docs/faults.md).
	Throttle bool
	Err      error // wrapped cause, if any
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable wraps err as a retryable failure with code.
func Retryable(code wire.Code, err error) *Error {
	return &Error{Code: code, Message: msg(err), Retryable: true, Err: err}
}

// Throttled wraps err as a throttle: come back after `after`, no failure counted.
func Throttled(code wire.Code, after time.Duration, err error) *Error {
	return &Error{Code: code, Message: msg(err), Retryable: true, Throttle: true, RetryAfter: after, Err: err}
}

// Permanent wraps err as a non-retryable failure with code.
func Permanent(code wire.Code, err error) *Error {
	return &Error{Code: code, Message: msg(err), Retryable: false, Err: err}
}

func msg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// retryableStatus is the set the seed retries: 408, 409, 429, 5xx we know.
var retryableStatus = map[int]bool{408: true, 409: true, 429: true, 500: true, 502: true, 503: true, 504: true, 529: true}

// FromStatus classifies an HTTP answer. retryAfter is the raw Retry-After
// header ("" when absent). A 429 without Retry-After is a spend limit: it
// "fails until access resumes", so it is not retried. A 429, 503 or 529 that
// names its retry-after is a throttle (Throttle): a delay, not a failure.
func FromStatus(status int, retryAfter string, body string) *Error {
	ra, hasRA := ParseRetryAfter(retryAfter, time.Now())
	return fromStatus(status, ra, hasRA, body)
}

// FromResponse is FromStatus reading the answer's headers: retry-after-ms
// (OpenAI, Anthropic; milliseconds) before Retry-After.
func FromResponse(status int, h http.Header, body string) *Error {
	ra, hasRA := RetryAfterHeaders(h, time.Now())
	return fromStatus(status, ra, hasRA, body)
}

func fromStatus(status int, ra time.Duration, hasRA bool, body string) *Error {
	e := &Error{Code: wire.Code(fmt.Sprintf("HTTP%d", status)), Status: status, Message: truncate(strings.TrimSpace(body), 512)}
	switch {
	case status == http.StatusTooManyRequests && !hasRA:
		e.Code = wire.SpendLimit
		e.Retryable = false
		if e.Message == "" {
			e.Message = "429 without retry-after"
		}
	case retryableStatus[status] || (status >= 500 && status <= 599):
		e.Retryable = true
		e.RetryAfter = ra
		e.Throttle = hasRA && throttleStatus[status]
	default:
		e.Retryable = false
	}
	return e
}

// throttleStatus are the answers that, with a retry-after, say "too much, come back then":
// rate limited, unavailable, overloaded (Anthropic's 529).
var throttleStatus = map[int]bool{429: true, 503: true, 529: true}

// RetryAfterHeaders reads retry-after-ms (milliseconds, as OpenAI and Anthropic send it)
// and else Retry-After (delta-seconds or an HTTP date).
func RetryAfterHeaders(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(1<<53) {
			return CapRetryAfter(ms * float64(time.Millisecond)), true
		}
	}
	return ParseRetryAfter(h.Get("Retry-After"), now)
}

// SetRetryAfterHeaders names a wait of d in both headers RetryAfterHeaders reads: Retry-After
// in whole seconds and retry-after-ms, each rounded up, so that no client comes back early.
// (Truncated, 999.7 ms read as 999 brought a client back while the throttle still held.)
func SetRetryAfterHeaders(h http.Header, d time.Duration) {
	h.Set("Retry-After", strconv.FormatInt(ceilDiv(d, time.Second), 10))
	h.Set("Retry-After-Ms", strconv.FormatInt(ceilDiv(d, time.Millisecond), 10))
}

// ceilDiv is d in units, rounded up.
func ceilDiv(d, unit time.Duration) int64 { return int64((d + unit - 1) / unit) }

// ParseRetryAfter reads delta-seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return CapRetryAfter(float64(n) * float64(time.Second)), true // ErrRange: n is the largest uint64
	}
	if t, err := http.ParseTime(v); err == nil {
		return CapRetryAfter(max(float64(t.Sub(now)), 0)), true
	}
	return 0, false
}

// MaxRetryAfter is the longest retry-after the worker reads: a wait past the time a message
// can stay hidden (SQS's visibility ceiling) means the same, and a longer one would overflow
// a time.Duration (a retry-after-ms near 2^53, a Retry-After of 10^11 s).
const MaxRetryAfter = wire.SQSMaxVisibility

// CapRetryAfter turns a wait in nanoseconds (a float, so that it cannot overflow) into a
// Duration no longer than MaxRetryAfter.
func CapRetryAfter(ns float64) time.Duration {
	if ns >= float64(MaxRetryAfter) {
		return MaxRetryAfter
	}
	return time.Duration(ns)
}

// Classify turns any error into an *Error. Deadline and cancellation are
// retryable (the step may fit next time, or another worker will pick it up);
// unclassified errors are retryable too, as the seed's nextAction treats a
// failure without a status.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: wire.Timeout, Message: err.Error(), Retryable: true, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: wire.Canceled, Message: err.Error(), Retryable: true, Err: err}
	}
	return &Error{Code: wire.Error, Message: err.Error(), Retryable: true, Err: err}
}

// Policy is the queue-level retry policy.
type Policy struct {
	MaxAttempts int           // attempts including the first; the receive count limit
	Base        time.Duration // full-jitter base
	Cap         time.Duration // full-jitter cap
	Rand        func() float64
}

// Backoff is full jitter: rand * min(cap, base * 2^attempt).
func (p Policy) Backoff(attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	ceil := p.Cap
	if attempt < 62 {
		if d := p.Base << uint(attempt); d > 0 && d < ceil {
			ceil = d
		}
	}
	return time.Duration(p.rand()() * float64(ceil))
}

// Decision is what to do with a failed step.
type Decision struct {
	DeadLetter bool
	Delay      time.Duration // when not dead-lettering
	Reason     *Error
}

// Decide applies the seed's nextAction: dead-letter non-retryable failures
// and exhausted attempts; otherwise retry after Retry-After or full jitter.
// attempt is 1-based (SQS ApproximateReceiveCount).
func (p Policy) Decide(err error, attempt int) Decision {
	e := Classify(err)
	if !e.Retryable {
		return Decision{DeadLetter: true, Reason: e}
	}
	if p.MaxAttempts > 0 && attempt >= p.MaxAttempts {
		return Decision{DeadLetter: true, Reason: &Error{
			Code:    wire.RetriesExhausted,
			Message: truncate(fmt.Sprintf("attempt %d of %d failed: %s", attempt, p.MaxAttempts, e.Error()), 1024),
			Status:  e.Status,
			Err:     e,
		}}
	}
	return Decision{Delay: p.Delay(e, attempt), Reason: e}
}

// ThrottleJitter is the largest share of a throttle's RetryAfter added as jitter, so the
// workers a throttle sent away do not all come back at the same instant.
const ThrottleJitter = 0.1

// Delay is the wait before retrying e after n counted failures: a throttle's RetryAfter (at
// least the policy's base, so a retry-after of 0 cannot spin; at most MaxRetryAfter) plus up
// to ThrottleJitter of it; another server-advised RetryAfter as given; else full jitter on n.
// A throttle's delay does not grow with n: it is not a failure (Counts).
func (p Policy) Delay(e *Error, n int) time.Duration {
	switch {
	case e.Throttle:
		ra := min(max(e.RetryAfter, p.Base), MaxRetryAfter)
		return ra + time.Duration(p.rand()()*ThrottleJitter*float64(ra))
	case e.RetryAfter > 0:
		return e.RetryAfter
	}
	return p.Backoff(n)
}

// Counts reports whether e spends a failure budget: every retryable failure but a throttle,
// which is a delay the dependency named.
func Counts(e *Error) bool { return !e.Throttle }

func (p Policy) rand() func() float64 {
	if p.Rand != nil {
		return p.Rand
	}
	return rand.Float64
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
