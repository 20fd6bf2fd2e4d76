// Package localhttptest sends, to a server guarded by localhttp, the requests a page on
// another site can make to loopback, and the one request the server's own page makes; each
// guarded surface's tests use it against its real handler.
package localhttptest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Attacker is the origin of the hostile page.
const Attacker = "http://attacker.example"

// Attack is one request a hostile page (or a DNS name rebound to 127.0.0.1) can send.
type Attack struct {
	Name   string
	Method string
	// Header is what the browser sends; "Host" sets the Host header.
	Header map[string]string
	Body   string
}

// Attacks are the requests every guarded surface refuses; body is a request the handler
// would otherwise accept, port the server's.
func Attacks(body, port string) []Attack {
	return []Attack{
		// A form or fetch with mode no-cors: no preflight, so the request is sent.
		{"cross-site text/plain POST", http.MethodPost, map[string]string{"Content-Type": "text/plain", "Origin": Attacker, "Sec-Fetch-Site": "cross-site"}, body},
		{"text/plain POST without Origin", http.MethodPost, map[string]string{"Content-Type": "text/plain"}, body},
		{"bodyless POST", http.MethodPost, nil, ""},
		{"foreign Origin", http.MethodPost, map[string]string{"Content-Type": "application/json", "Origin": Attacker}, body},
		{"Sec-Fetch-Site cross-site", http.MethodPost, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, body},
		// After DNS rebinding the page is same-origin with the server: only Host tells.
		{"foreign Host (rebinding)", http.MethodPost, map[string]string{"Content-Type": "application/json", "Host": "attacker.example:" + port,
			"Origin": Attacker + ":" + port, "Sec-Fetch-Site": "same-origin"}, body},
	}
}

// Send sends one request to target with the given headers (and extra, e.g. a token).
func Send(t testing.TB, method, target string, header map[string]string, extra http.Header, body string) (int, string) {
	t.Helper()
	var rd io.Reader = http.NoBody
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Refused sends every attack to target (a POST route whose handler would accept body) and
// fails t for each one not answered 403 or 415.
func Refused(t testing.TB, target, body string, extra http.Header) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range Attacks(body, u.Port()) {
		code, answer := Send(t, a.Method, target, a.Header, extra, a.Body)
		if code != http.StatusForbidden && code != http.StatusUnsupportedMediaType {
			t.Errorf("%s to %s: %d %s, want 403 or 415", a.Name, u.Path, code, answer)
		}
	}
}

// ReadRefused fails t unless a GET of target addressed to a rebound name is answered 403.
func ReadRefused(t testing.TB, target string, extra http.Header) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	if code, answer := Send(t, http.MethodGet, target, map[string]string{"Host": "attacker.example:" + u.Port()}, extra, ""); code != http.StatusForbidden {
		t.Errorf("GET %s as attacker.example (rebinding read): %d %s, want 403", u.Path, code, answer)
	}
}

// SameOrigin sends the request the server's own page sends: JSON, from the served origin,
// as a browser marks it.
func SameOrigin(t testing.TB, target, body string, extra http.Header) (int, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	return Send(t, http.MethodPost, target, map[string]string{"Content-Type": "application/json",
		"Origin": u.Scheme + "://" + u.Host, "Sec-Fetch-Site": "same-origin"}, extra, body)
}
