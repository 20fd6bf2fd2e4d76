// Package gateway is fleet-worker's local model gateway: a loopback HTTP server (HTTP/1.1
// and cleartext HTTP/2) that speaks the OpenAI-compatible POST /v1/chat/completions and
// POST /v1/responses (streamed as server-sent events when asked) and Bedrock's POST /model/{modelId}/converse
// and /converse-stream, and sends every call through the class's router policy. So an
// exec or http handler in any language gets the fleet's retries, fallbacks, caps and spans
// by changing its base URL. Each process's gateway has its own random bearer token.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/fleetc/fleetc/internal/localhttp"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
	"github.com/fleetc/fleetc/runtime/router/bedrock/converse"
	"github.com/fleetc/fleetc/runtime/router/gateway/gatewayenv"
	"github.com/fleetc/fleetc/runtime/router/openai"
)

// The environment variables fleet-worker sets for its exec handlers are in
// runtime/router/gateway/gatewayenv.
const (
	// HeaderDeadline bounds a call (RFC 3339); exec handlers get it as FLEET_DEADLINE.
	HeaderDeadline = "X-Fleet-Deadline"
)

// servedPaths is what a request for anything else is told.
const servedPaths = "the gateway serves POST /v1/chat/completions, POST /v1/responses and POST /model/{modelId}/converse[-stream]"

// maxBody bounds a request body.
const maxBody = 16 << 20

// Gateway serves the router on a loopback listener.
type Gateway struct {
	router  *admission    // the router behind admission control (admission.go)
	policy  string        // the class's policy; a request naming another configured policy gets that one
	timeout time.Duration // bound for a call that names no deadline
	token   string
	srv     *http.Server
	ln      net.Listener
	seq     atomic.Uint64
	// Bookkeeping (metrics.go): the collectors, each policy's series, what serves GET /metrics.
	metrics        *Metrics
	series         map[string]*series
	metricsHandler http.Handler
}

// Options tune StartWith and NewWith; the zero value is Start's and New's.
type Options struct {
	// Metrics records the gateway's own time, queueing time and answers (nil: none).
	Metrics *Metrics
	// MetricsHandler serves GET /metrics on the gateway's listener (nil: not served).
	MetricsHandler http.Handler
	// MaxWaiting bounds each policy's requests waiting for capacity beyond its
	// max_in_flight; 0: DefaultWaitingPerSlot per slot.
	MaxWaiting int
}

// Start listens on addr (default 127.0.0.1:0) and serves until Close. timeout bounds
// calls that carry no X-Fleet-Deadline (the step's max).
func Start(r *router.Router, policy, addr string, timeout time.Duration) (*Gateway, error) {
	return StartWith(r, policy, addr, timeout, Options{})
}

// StartWith is Start with options.
func StartWith(r *router.Router, policy, addr string, timeout time.Duration, o Options) (*Gateway, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := localhttp.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	g := NewWith(r, policy, timeout, o)
	g.ln = ln
	// HTTP/1.1 and cleartext HTTP/2 with prior knowledge: the AWS SDK for JavaScript's
	// Bedrock Runtime client speaks HTTP/2 only.
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, Protocols: &protos}
	go g.srv.Serve(ln)
	return g, nil
}

// NewWith is New with options.
func NewWith(r *router.Router, policy string, timeout time.Duration, o Options) *Gateway {
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	g := &Gateway{router: newAdmission(r, o.MaxWaiting, o.Metrics), policy: policy, timeout: timeout, token: hex.EncodeToString(b[:]),
		metrics: o.Metrics, metricsHandler: o.MetricsHandler}
	if o.Metrics != nil {
		g.series = map[string]*series{noPolicy: o.Metrics.forPolicy(noPolicy)}
		for p, gt := range g.router.gates {
			g.series[p] = gt.series
		}
	}
	return g
}

// URL is the gateway's root URL.
func (g *Gateway) URL() string { return "http://" + g.ln.Addr().String() }

// Token is the bearer token requests must carry.
func (g *Gateway) Token() string { return g.token }

// Env is what an exec handler's environment gets.
func (g *Gateway) Env() []string {
	return []string{gatewayenv.URL + "=" + g.URL() + "/v1", gatewayenv.BedrockURL + "=" + g.URL(), gatewayenv.Token + "=" + g.token}
}

// Close stops the listener and waits for calls in progress (bounded by ctx).
func (g *Gateway) Close(ctx context.Context) error {
	if g.srv == nil {
		return nil
	}
	return g.srv.Shutdown(ctx)
}

// refused is how a localhttp refusal answers in both wire formats.
func refused(ref *localhttp.Refusal) failure {
	f := failure{status: ref.Status, openaiType: "invalid_request_error", code: string(ref.Reason), bedrockType: "AccessDeniedException", final: true}
	if ref.Reason == localhttp.NotJSON {
		f.bedrockType = "ValidationException"
	}
	return f
}

// api is the wire format a request speaks; errors answer in it.
type api int

const (
	apiOpenAI api = iota
	apiConverse
)

// serve checks the caller (localhttp: Host, Origin, Content-Type; then the token) and
// routes the API shapes (ServeHTTP, metrics.go, wraps it).
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	if r.Method == http.MethodGet && path == "/healthz" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	a := apiOpenAI
	if strings.HasPrefix(path, "/model/") {
		a = apiConverse
	}
	// A page on another site, or on a DNS name rebound to loopback, reaches the gateway too:
	// localhttp refuses its Host, its Origin, and any body but JSON.
	if ref := localhttp.Check(r); ref != nil {
		g.fail(w, a, refused(ref), ref.Message, 0)
		return
	}
	if !g.authorized(r) {
		g.fail(w, a, unauthorized[a], "missing or wrong gateway token: send Authorization: Bearer $"+gatewayenv.Token, 0)
		return
	}
	if r.Method != http.MethodPost {
		g.fail(w, a, notFound, servedPaths, 0)
		return
	}
	switch {
	case path == "/v1/chat/completions" || path == "/chat/completions":
		g.chat(w, r)
	case path == "/v1/responses" || path == "/responses":
		g.responses(w, r)
	case a == apiConverse && strings.HasSuffix(path, "/converse"):
		g.converse(w, r, strings.TrimSuffix(strings.TrimPrefix(path, "/model/"), "/converse"), false)
	case a == apiConverse && strings.HasSuffix(path, "/converse-stream"):
		g.converse(w, r, strings.TrimSuffix(strings.TrimPrefix(path, "/model/"), "/converse-stream"), true)
	default:
		g.fail(w, a, notFound, servedPaths, 0)
	}
}

// authorized checks the token: Authorization: Bearer (the openai SDKs; the AWS SDKs with
// AWS_BEARER_TOKEN_BEDROCK), x-api-key, or a SigV4 signature whose access key id is the
// token (AWS SDKs that sign every request, e.g. the Go SDK, whose bearer signer insists
// on HTTPS). The signature itself is not checked: the secret is the token.
func (g *Gateway) authorized(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		if cred, signed := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 Credential="); signed {
			tok, _, _ = strings.Cut(cred, "/")
		} else {
			tok = r.Header.Get("X-Api-Key")
		}
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(g.token)) == 1
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

// routerRequest reads an OpenAI-shaped request body with decode and turns it into a router
// request; a body it cannot use is answered 400 in the OpenAI shape (ok false).
func routerRequest[T interface {
	ToRouter() (*router.Request, error)
}](g *Gateway, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (in T, req *router.Request, ok bool) {
	body, err := readBody(r)
	if err == nil {
		in, err = decode(body)
	}
	if err != nil {
		g.fail(w, apiOpenAI, badRequest, "request body: "+err.Error(), 0)
		return in, nil, false
	}
	if req, err = in.ToRouter(); err != nil {
		g.fail(w, apiOpenAI, badRequest, err.Error(), 0)
		return in, nil, false
	}
	return in, req, true
}

func (g *Gateway) chat(w http.ResponseWriter, r *http.Request) {
	in, req, ok := routerRequest(g, w, r, openai.DecodeRequest)
	if !ok {
		return
	}
	ctx, cancel := g.context(r)
	defer cancel()
	id := "chatcmpl-fleet-" + strconv.FormatUint(g.seq.Add(1), 10)
	if !in.Stream {
		resp, err := g.router.Chat(ctx, g.policyFor(in.Model), req)
		if err != nil {
			g.routeError(w, apiOpenAI, err)
			return
		}
		writeJSON(w, resp, openai.FromRouterResponse(id, time.Now().Unix(), resp))
		return
	}
	includeUsage := in.StreamOptions != nil && in.StreamOptions.IncludeUsage
	g.streamOpenAI(ctx, w, g.policyFor(in.Model), req, func() openAIStream {
		return openai.NewSSEWriter(w, id, "", time.Now().Unix(), includeUsage)
	})
}

// openAIStream writes a streamed answer in one of the OpenAI shapes (chat completion chunks,
// Responses API events).
type openAIStream interface {
	Event(router.StreamEvent) error
	Error(typ, code, msg string) error
	Done() error
}

// streamOpenAI routes req as a stream. The answer is committed by its first event: only then
// are the headers written and the writer opened, so a failure before it is still an HTTP
// error (routeError); one after it ends the stream with an error event, never its end.
func (g *Gateway) streamOpenAI(ctx context.Context, w http.ResponseWriter, policy string, req *router.Request, open func() openAIStream) {
	var sw openAIStream
	_, err := g.router.ChatStream(ctx, policy, req, func(ev router.StreamEvent) error {
		if sw == nil {
			streamHeaders(w, "text/event-stream", ev.Meta)
			sw = open()
		}
		return sw.Event(ev)
	})
	switch {
	case err != nil && sw == nil:
		g.routeError(w, apiOpenAI, err)
	case err != nil:
		f, _ := classify(err)
		sw.Error(f.openaiType, f.code, err.Error())
	default:
		sw.Done()
	}
}

func (g *Gateway) converse(w http.ResponseWriter, r *http.Request, modelID string, stream bool) {
	start := time.Now()
	if id, err := url.PathUnescape(modelID); err == nil {
		modelID = id
	}
	body, err := readBody(r)
	if err != nil {
		g.fail(w, apiConverse, badRequest, "request body: "+err.Error(), 0)
		return
	}
	in, err := converse.DecodeRequest(body)
	if err != nil {
		g.fail(w, apiConverse, badRequest, "request body: "+err.Error(), 0)
		return
	}
	req, err := bedrock.ToRouter(in)
	if err != nil {
		g.fail(w, apiConverse, badRequest, err.Error(), 0)
		return
	}
	ctx, cancel := g.context(r)
	defer cancel()
	if !stream {
		resp, err := g.router.Chat(ctx, g.policyFor(modelID), req)
		if err != nil {
			g.routeError(w, apiConverse, err)
			return
		}
		writeJSON(w, resp, bedrock.FromRouter(resp, time.Since(start).Milliseconds()))
		return
	}
	var ew *bedrock.EventWriter
	_, err = g.router.ChatStream(ctx, g.policyFor(modelID), req, func(ev router.StreamEvent) error {
		if ew == nil {
			streamHeaders(w, bedrock.ContentTypeEventStream, ev.Meta)
			ew = bedrock.NewEventWriter(w)
		}
		return ew.Event(ev, time.Since(start).Milliseconds())
	})
	switch {
	case err != nil && ew == nil:
		g.routeError(w, apiConverse, err)
	case err != nil:
		f, _ := classify(err)
		ew.Exception(f.streamException, err.Error())
	}
}

// streamHeaders commits a streamed answer; meta is its first event's (the router names
// the policy and deployment there), so streams carry the X-Fleet-Model-* headers too.
func streamHeaders(w http.ResponseWriter, contentType string, meta *router.AnswerMeta) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	if meta != nil {
		modelHeaders(h, meta.Policy, meta.Deployment)
	}
	w.WriteHeader(http.StatusOK)
}

// modelHeaders name the policy and deployment that answered.
func modelHeaders(h http.Header, policy, deployment string) {
	h.Set("X-Fleet-Model-Policy", policy)
	h.Set("X-Fleet-Model-Deployment", deployment)
}

func writeJSON(w http.ResponseWriter, resp *router.Response, body any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	modelHeaders(h, resp.Policy, resp.Deployment)
	writeBody(w, body)
}
