// Test-only ways into the gateway: fleet-worker always builds it through StartWith.
package gateway

import (
	"time"

	"github.com/fleetc/fleetc/runtime/router"
)

// New returns the gateway's handler without a listener (tests, benchmarks), with a fresh token.
func New(r *router.Router, policy string, timeout time.Duration) *Gateway {
	return NewWith(r, policy, timeout, Options{})
}
