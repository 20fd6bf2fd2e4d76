// Package localhttp guards the HTTP servers fleetc and fleet-worker run on the developer's
// machine (fleetc dev's page and API, fleet-worker --mode tools' listener, the model
// gateway) against the browser: any page the developer opens can send requests to
// loopback, and a DNS name rebound to 127.0.0.1 can read the answers.
//
// A guarded server listens on loopback only, answers only requests addressed to a loopback
// name (Host), and takes a state-changing request (any method but GET and HEAD) only as
// application/json from its own origin: a cross-site form or text/plain POST, a bodyless
// POST and a fetch from another origin are refused before the handler runs.
package localhttp

import (
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
)

// DefaultHost is the address a local server binds when not told otherwise.
const DefaultHost = "127.0.0.1"

// ContentType is the only media type a state-changing request may carry.
const ContentType = "application/json"

// IsLoopbackName reports whether host (without a port; an IPv6 literal with or without
// brackets) names this machine's loopback: localhost, 127.0.0.0/8 or ::1.
func IsLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListenAddr refuses a listen address (host:port) whose host is not a loopback name;
// an empty host (every interface) is refused too.
func CheckListenAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !IsLoopbackName(host) {
		return fmt.Errorf("listen address %q: loopback only (%s, localhost, [::1])", addr, DefaultHost)
	}
	return nil
}

// Listen listens on addr after CheckListenAddr.
func Listen(addr string) (net.Listener, error) {
	if err := CheckListenAddr(addr); err != nil {
		return nil, err
	}
	return net.Listen("tcp", addr)
}

// Reason says why a request was refused; it is the error code the servers answer.
type Reason string

const (
	// ForeignHost: the Host header is not a loopback name (DNS rebinding).
	ForeignHost Reason = "forbidden_host"
	// CrossOrigin: a state-changing request from another origin (Origin, Sec-Fetch-Site).
	CrossOrigin Reason = "cross_origin"
	// NotJSON: a state-changing request without Content-Type: application/json.
	NotJSON Reason = "unsupported_media_type"
)

// Refusal is a refused request: its reason, HTTP status and a message for the caller.
type Refusal struct {
	Reason  Reason
	Status  int
	Message string
}

// Check returns nil when r may be served, else why not.
func Check(r *http.Request) *Refusal {
	if !loopbackHost(r.Host) {
		return &Refusal{ForeignHost, http.StatusForbidden, fmt.Sprintf("Host %q is not a loopback name", r.Host)}
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	// A browser says where a request comes from; a non-browser client says nothing.
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return &Refusal{CrossOrigin, http.StatusForbidden, fmt.Sprintf("Sec-Fetch-Site %q: only same-origin requests may change state", site)}
	}
	if o := r.Header.Get("Origin"); o != "" && o != origin(r) {
		return &Refusal{CrossOrigin, http.StatusForbidden, fmt.Sprintf("Origin %q is not %s", o, origin(r))}
	}
	// application/json cannot be sent cross-origin without a CORS preflight, which these
	// servers never grant; a bodyless POST carries no Content-Type and is refused too.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != ContentType {
		return &Refusal{NotJSON, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: want %s", r.Header.Get("Content-Type"), ContentType)}
	}
	return nil
}

// loopbackHost reports whether a Host header (name, optional port) is a loopback name.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return IsLoopbackName(host)
}

// origin is the origin the request was served on, as a browser writes it in Origin.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Guard serves h only the requests Check accepts; a refusal is answered as JSON
// {"error": message, "code": reason}.
func Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref := Check(r); ref != nil {
			w.Header().Set("Content-Type", ContentType)
			w.WriteHeader(ref.Status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": ref.Message, "code": string(ref.Reason)})
			return
		}
		h.ServeHTTP(w, r)
	})
}
