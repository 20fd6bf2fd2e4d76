// Package transport builds the one pooled HTTP client each model provider uses, shared by
// every caller in the process (the llm handler and the local gateway alike): keep-alive,
// idle connections sized to the calls the provider may have in flight, HTTP/2 where the
// upstream offers it over TLS. http.DefaultClient keeps 2 idle connections per host, so at
// a few hundred calls per second most calls paid for a new TCP (and TLS) connection.
package transport

import (
	"net"
	"net/http"
	"time"
)

// DefaultIdle is the idle pool size for a provider whose policies set no max_in_flight.
const DefaultIdle = 256

// IdleTimeout closes a pooled connection unused this long (under the 350 s idle timeout of
// AWS load balancers, so the server side never closes first in the common case).
const IdleTimeout = 90 * time.Second

// New returns a client whose pool keeps up to maxInFlight idle connections per host
// (DefaultIdle when maxInFlight <= 0). It has no client-side timeout: the router's
// per-call timeout and the step deadline bound every call through the context.
func New(maxInFlight int) *http.Client {
	if maxInFlight <= 0 {
		maxInFlight = DefaultIdle
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxInFlight * 2,
		MaxIdleConnsPerHost:   maxInFlight,
		IdleConnTimeout:       IdleTimeout,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}
