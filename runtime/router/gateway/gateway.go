// Package gateway is fleet-worker's local model gateway: a loopback HTTP server that
// speaks the OpenAI-compatible POST /v1/chat/completions and Bedrock's
// POST /model/{modelId}/converse, and sends every call through the class's router
// policy. So an exec or http handler in any language gets the fleet's retries,
// fallbacks, caps and spans by changing its base URL.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
	"github.com/fleetc/fleetc/runtime/router/openai"
)

// Environment variables fleet-worker sets for its exec handlers.
const (
	// EnvURL is the OpenAI-compatible base URL (ends in /v1): OPENAI_BASE_URL for most clients.
	EnvURL = "FLEET_MODEL_GATEWAY_URL"
	// EnvBedrockURL is the root URL for Bedrock Converse clients
	// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME for the AWS SDKs).
	EnvBedrockURL = "FLEET_MODEL_GATEWAY_BEDROCK_URL"
	// HeaderDeadline bounds a call (RFC 3339); exec handlers get it as FLEET_DEADLINE.
	HeaderDeadline = "X-Fleet-Deadline"
)

// maxBody bounds a request body.
const maxBody = 16 << 20

// Gateway serves the router on a loopback listener.
type Gateway struct {
	router  *router.Router
	policy  string        // the class's policy; a request naming another configured policy gets that one
	timeout time.Duration // bound for a call that names no deadline
	srv     *http.Server
	ln      net.Listener
	seq     atomic.Uint64
}

// Start listens on addr (default 127.0.0.1:0) and serves until Close. timeout bounds
// calls that carry no X-Fleet-Deadline (the step's max).
func Start(r *router.Router, policy, addr string, timeout time.Duration) (*Gateway, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("model gateway address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("model gateway address %q: loopback only (it holds no credentials check)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	g := New(r, policy, timeout)
	g.ln = ln
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go g.srv.Serve(ln)
	return g, nil
}

// New returns the gateway's handler without a listener (tests, benchmarks).
func New(r *router.Router, policy string, timeout time.Duration) *Gateway {
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	return &Gateway{router: r, policy: policy, timeout: timeout}
}

// URL is the gateway's root URL.
func (g *Gateway) URL() string { return "http://" + g.ln.Addr().String() }

// Env is what an exec handler's environment gets.
func (g *Gateway) Env() []string {
	return []string{EnvURL + "=" + g.URL() + "/v1", EnvBedrockURL + "=" + g.URL()}
}

// Close stops the listener and waits for calls in progress (bounded by ctx).
func (g *Gateway) Close(ctx context.Context) error {
	if g.srv == nil {
		return nil
	}
	return g.srv.Shutdown(ctx)
}

// ServeHTTP routes the two API shapes.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	switch {
	case r.Method == http.MethodPost && (path == "/v1/chat/completions" || path == "/chat/completions"):
		g.chat(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/model/") && strings.HasSuffix(path, "/converse"):
		g.converse(w, r, strings.TrimSuffix(strings.TrimPrefix(path, "/model/"), "/converse"))
	case r.Method == http.MethodGet && path == "/healthz":
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "not found: the gateway serves POST /v1/chat/completions and POST /model/{modelId}/converse", http.StatusNotFound)
	}
}

// context bounds the call by the caller's deadline header, else by the gateway timeout.
// A traceparent header makes the chat spans children of the caller's (exec handlers
// get the step's as TRACEPARENT).
func (g *Gateway) context(r *http.Request) (context.Context, context.CancelFunc) {
	ctx := r.Context()
	if r.Header.Get("traceparent") != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	if v := r.Header.Get(HeaderDeadline); v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return context.WithDeadline(ctx, t)
		}
	}
	return context.WithTimeout(ctx, g.timeout)
}

// policyFor is the named policy when the request names one this class may use, else the class's.
func (g *Gateway) policyFor(model string) string {
	if model != "" && g.router.Has(model) {
		return model
	}
	return g.policy
}

func (g *Gateway) chat(w http.ResponseWriter, r *http.Request) {
	var in openai.ChatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&in); err != nil {
		openaiError(w, http.StatusBadRequest, "invalid_request_error", "", "request body: "+err.Error(), 0)
		return
	}
	ctx, cancel := g.context(r)
	defer cancel()
	resp, err := g.router.Chat(ctx, g.policyFor(in.Model), in.ToRouter())
	if err != nil {
		st, code, ra := status(err)
		typ := "api_error"
		if st == http.StatusBadRequest {
			typ = "invalid_request_error"
		}
		openaiError(w, st, typ, code, err.Error(), ra)
		return
	}
	out := openai.FromRouterResponse("chatcmpl-fleet-"+strconv.FormatUint(g.seq.Add(1), 10), time.Now().Unix(), resp)
	writeJSON(w, resp, out)
}

func (g *Gateway) converse(w http.ResponseWriter, r *http.Request, modelID string) {
	start := time.Now()
	var in bedrock.ConverseRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&in); err != nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "request body: "+err.Error(), 0)
		return
	}
	ctx, cancel := g.context(r)
	defer cancel()
	resp, err := g.router.Chat(ctx, g.policyFor(modelID), in.ToRouter())
	if err != nil {
		st, code, ra := status(err)
		bedrockError(w, st, bedrockCodes[code], err.Error(), ra)
		return
	}
	writeJSON(w, resp, bedrock.FromRouter(resp, time.Since(start).Milliseconds()))
}

func writeJSON(w http.ResponseWriter, resp *router.Response, body any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Fleet-Model-Policy", resp.Policy)
	h.Set("X-Fleet-Model-Deployment", resp.Deployment)
	json.NewEncoder(w).Encode(body)
}

// status maps the router's verdict onto HTTP so a caller's own classification (the
// seed's) does the right thing: SpendLimit stays a 429 without Retry-After (never
// retried), a retryable failure is a 503 with Retry-After, a step deadline a 504.
func status(err error) (int, string, time.Duration) {
	var re *retry.Error
	if !errors.As(err, &re) {
		return http.StatusBadGateway, "model_error", 0
	}
	switch re.Code {
	case router.CodeSpendLimit:
		return http.StatusTooManyRequests, "spend_limit", 0
	case router.CodeContextWindow:
		return http.StatusBadRequest, "context_length_exceeded", 0
	case router.CodeModelRejected, router.CodeUnknownPolicy:
		return http.StatusBadRequest, "model_request_rejected", 0
	case router.CodeStepDeadline:
		return http.StatusGatewayTimeout, "timeout", 0
	}
	ra := re.RetryAfter
	if ra <= 0 {
		ra = time.Second
	}
	return http.StatusServiceUnavailable, "model_unavailable", ra
}

var bedrockCodes = map[string]string{
	"spend_limit": "ServiceQuotaExceededException", "context_length_exceeded": "ValidationException",
	"model_request_rejected": "ValidationException", "timeout": "ModelTimeoutException",
	"model_unavailable": "ServiceUnavailableException", "model_error": "InternalServerException",
}

func retryAfter(w http.ResponseWriter, ra time.Duration) {
	if ra > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ra.Seconds()))))
	}
}

func openaiError(w http.ResponseWriter, st int, typ, code, msg string, ra time.Duration) {
	retryAfter(w, ra)
	var eb openai.ErrorBody
	eb.Error.Type, eb.Error.Code, eb.Error.Message = typ, code, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(st)
	json.NewEncoder(w).Encode(eb)
}

func bedrockError(w http.ResponseWriter, st int, code, msg string, ra time.Duration) {
	retryAfter(w, ra)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(st)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
