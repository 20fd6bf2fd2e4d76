package router

import (
	"context"
	"time"
)

// Timing is where one routed call's time went besides the caller's own work: the
// gateway subtracts it from a request's wall time to measure its own cost, and reports the
// queueing apart. The router fills it when the context carries it (WithTiming); one
// call at a time, so the fields need no lock.
type Timing struct {
	// Upstream is the time inside provider calls, every attempt (for a stream, until its
	// last event was handed on).
	Upstream time.Duration
	// Queued is the time waiting for capacity: a max_in_flight slot or the token bucket.
	Queued time.Duration
	// Backoff is the time waiting between attempts: jittered backoff and an upstream's
	// retry-after.
	Backoff time.Duration
}

type timingKey struct{}

// WithTiming returns ctx carrying t, which the router adds a call's times to.
func WithTiming(ctx context.Context, t *Timing) context.Context {
	return context.WithValue(ctx, timingKey{}, t)
}

// timingOf is ctx's Timing, nil when it carries none.
func timingOf(ctx context.Context) *Timing {
	t, _ := ctx.Value(timingKey{}).(*Timing)
	return t
}

// queued adds the time since start to Queued; a nil Timing records nothing.
func (t *Timing) queued(start time.Time) {
	if t != nil {
		t.Queued += time.Since(start)
	}
}

// backoff adds the time since start to Backoff; a nil Timing records nothing.
func (t *Timing) backoff(start time.Time) {
	if t != nil {
		t.Backoff += time.Since(start)
	}
}
