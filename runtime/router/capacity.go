package router

import (
	"slices"
	"time"
)

// What the router tells a front end (the gateway's admission control) about a policy's
// capacity.

// Policies are the configured policy names, sorted.
func (r *Router) Policies() []string {
	names := make([]string, 0, len(r.groups))
	for n := range r.groups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// MaxInFlight is the policy's per-process max_in_flight (0: uncapped, or no such policy).
func (r *Router) MaxInFlight(policy string) int {
	if g := r.groups[policy]; g != nil {
		return g.p.MaxInFlight
	}
	return 0
}

// Comeback is how long until the policy or one of its fallbacks can take a call (0: one
// can now, or no such policy), from the router's own state: cooldowns, upstream
// retry-afters and token buckets; throttle says a rate limit is what keeps it away.
func (r *Router) Comeback(policy string) (time.Duration, bool) {
	g := r.groups[policy]
	if g == nil {
		return 0, false
	}
	return comeback(append([]*group{g}, g.fallbacks...), time.Now())
}
