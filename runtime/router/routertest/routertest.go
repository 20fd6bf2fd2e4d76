// Package routertest has fake model servers for tests: no emulator exists for Bedrock
// Runtime, so Bedrock is an httptest server that checks each request the way the
// Converse API reference documents it (POST /model/{modelId}/converse, SigV4-signed
// JSON) and answers in its wire format, errors included (status, X-Amzn-ErrorType,
// {"message"}); OpenAI is an httptest server speaking POST /v1/chat/completions.
// Both are scripted per call to fail: hard down, 429 waves, 529, slow answers.
package routertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
	"github.com/fleetc/fleetc/runtime/router/bedrock/converse"
	"github.com/fleetc/fleetc/runtime/router/openai"
)

// Reply is one scripted answer.
type Reply struct {
	Status     int    // 0 = 200
	ErrorCode  string // Bedrock X-Amzn-ErrorType / OpenAI error.code
	Message    string // error message (default: "scripted <code>")
	FailAfter  int    // streamed answers: an error event in place of event FailAfter (0 = none)
	StopReason string // default end_turn (tool_use with ToolUse)
	Body       string // raw error body instead of the provider's envelope (another server's wording)
	RetryAfter string // Retry-After header, "" = none
	// RetryAfterMs is the retry-after-ms header ("" = none): OpenAI sends it on a rate limit,
	// and proxies in front of Bedrock (LiteLLM, a gateway) pass it on.
	RetryAfterMs string
	Delay        time.Duration // answer after this long (or when the client gives up)
	Text         string
	ToolUse      *router.ToolUse
	Usage        router.Usage
	// Answer fields only an OpenAI-compatible target sends (the fake OpenAI server does,
	// whole and streamed: the logprobs object with the first piece of text).
	Logprobs                       json.RawMessage
	SystemFingerprint, ServiceTier string
}

func (r Reply) errMessage() string {
	if r.Message != "" {
		return r.Message
	}
	return "scripted " + r.ErrorCode
}

func (r Reply) retryAfter(h http.Header) {
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}
	if r.RetryAfterMs != "" {
		h.Set("Retry-After-Ms", r.RetryAfterMs)
	}
}

// Script picks the reply to call n (1-based) of req.
type Script func(n int, req *router.Request) Reply

// Always answers every call with r.
func Always(r Reply) Script { return func(int, *router.Request) Reply { return r } }

// Server is a fake provider endpoint.
type Server struct {
	*httptest.Server
	Kind     string // "bedrock" | "openai"
	mu       sync.Mutex
	calls    int
	at       []time.Time // when each request arrived
	models   []string
	requests []*router.Request
	remotes  map[string]bool // client addresses seen: one per TCP connection
	bodies   [][]byte
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	t        testing.TB
	script   Script
}

// Calls is the number of requests received.
func (s *Server) Calls() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

// Arrivals are when the requests arrived, in order: the gaps between them are what a
// client waited, without its own start-up time.
func (s *Server) Arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

// MaxInFlight is the most requests the server held at once.
func (s *Server) MaxInFlight() int { return int(s.maxSeen.Load()) }

// Bodies are the raw request bodies, in arrival order.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Conns is the number of distinct client connections that sent a request.
func (s *Server) Conns() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.remotes) }

// Requests are the decoded requests, in arrival order.
func (s *Server) Requests() []*router.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*router.Request(nil), s.requests...)
}

// Models are the model ids requested, in arrival order.
func (s *Server) Models() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.models...)
}

func (s *Server) begin(r *http.Request, model string, req *router.Request, body []byte) (int, func()) {
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	if s.remotes == nil {
		s.remotes = map[string]bool{}
	}
	s.remotes[r.RemoteAddr] = true
	s.calls++
	s.at = append(s.at, time.Now())
	n := s.calls
	s.models = append(s.models, model)
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	cur := s.inFlight.Add(1)
	for m := s.maxSeen.Load(); cur > m && !s.maxSeen.CompareAndSwap(m, cur); m = s.maxSeen.Load() {
	}
	return n, func() { s.inFlight.Add(-1) }
}

func wait(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-time.After(d):
	case <-r.Context().Done():
	}
}

// Bedrock starts a fake Bedrock Runtime.
func Bedrock(t testing.TB, script Script) *Server {
	s := &Server{Kind: "bedrock", t: t, script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serveBedrock))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serveBedrock(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
	model, stream := strings.CutSuffix(rest, "/converse-stream")
	ok2 := stream
	if !stream {
		model, ok2 = strings.CutSuffix(rest, "/converse")
	}
	if r.Method != http.MethodPost || !ok || !ok2 || model == "" {
		s.t.Errorf("bedrock: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, `{"message":"unknown operation"}`, http.StatusNotFound)
		return
	}
	model, _ = url.PathUnescape(model)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.t.Errorf("bedrock: Content-Type %q, want application/json", ct)
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, "/bedrock/aws4_request") {
		s.t.Errorf("bedrock: Authorization %q is not a SigV4 signature for service bedrock", auth)
	}
	body, _ := io.ReadAll(r.Body)
	in, err := converse.DecodeRequest(body)
	var req *router.Request
	if err == nil {
		req, err = bedrock.ToRouter(in)
	}
	if err != nil || len(req.Messages) == 0 {
		s.t.Errorf("bedrock: request body: %v", err)
		req = &router.Request{}
	}
	n, done := s.begin(r, model, req, body)
	defer done()
	rep := s.script(n, req)
	wait(r, rep.Delay)
	rep.retryAfter(w.Header())
	w.Header().Set("Content-Type", "application/json")
	if rep.Status >= 300 {
		w.Header().Set("X-Amzn-ErrorType", rep.ErrorCode)
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, `{"message":%q}`, rep.errMessage())
		return
	}
	if !stream {
		json.NewEncoder(w).Encode(bedrock.FromRouter(reply(model, rep), 1))
		return
	}
	w.Header().Set("Content-Type", bedrock.ContentTypeEventStream)
	ew := bedrock.NewEventWriter(w)
	for i, ev := range events(reply(model, rep)) {
		if rep.FailAfter > 0 && i == rep.FailAfter {
			ew.Exception("modelStreamErrorException", "scripted failure mid-stream")
			return
		}
		ew.Event(ev, 1)
	}
}

// OpenAI starts a fake OpenAI-compatible server; its base URL is URL+"/v1". When key
// is set, requests must carry it as a bearer token. stream: true is answered with
// server-sent events.
func OpenAI(t testing.TB, key string, script Script) *Server {
	s := &Server{Kind: "openai", t: t, script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("openai: unexpected %s %s", r.Method, r.URL.Path)
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			t.Errorf("openai: Authorization %q", r.Header.Get("Authorization"))
		}
		body, _ := io.ReadAll(r.Body)
		in, err := openai.DecodeRequest(body)
		var req *router.Request
		if err == nil {
			req, err = in.ToRouter()
		}
		if err != nil || in.Model == "" {
			t.Errorf("openai: request body: %v", err)
			in, req = &openai.ChatRequest{}, &router.Request{}
		}
		n, done := s.begin(r, in.Model, req, body)
		defer done()
		rep := s.script(n, req)
		wait(r, rep.Delay)
		rep.retryAfter(w.Header())
		w.Header().Set("Content-Type", "application/json")
		if rep.Status >= 300 {
			w.WriteHeader(rep.Status)
			if rep.Body != "" {
				io.WriteString(w, rep.Body)
				return
			}
			var eb openai.ErrorBody
			eb.Error.Message, eb.Error.Type, eb.Error.Code = rep.errMessage(), "error", rep.ErrorCode
			json.NewEncoder(w).Encode(eb)
			return
		}
		resp := reply(in.Model, rep)
		if !in.Stream {
			json.NewEncoder(w).Encode(openai.FromRouterResponse(fmt.Sprintf("chatcmpl-%d", n), 1700000000, resp))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sw := openai.NewSSEWriter(w, fmt.Sprintf("chatcmpl-%d", n), in.Model, 1700000000, in.StreamOptions != nil && in.StreamOptions.IncludeUsage)
		for i, ev := range events(resp) {
			if rep.FailAfter > 0 && i == rep.FailAfter {
				sw.Error("server_error", "", "scripted failure mid-stream")
				return
			}
			sw.Event(ev)
		}
		sw.Done()
	}))
	t.Cleanup(s.Close)
	return s
}

// events is the stream of resp: text in two pieces, tool input in two pieces.
func events(resp *router.Response) []router.StreamEvent {
	evs := []router.StreamEvent{{Kind: router.EventMessageStart,
		Meta: &router.AnswerMeta{Model: resp.Model, SystemFingerprint: resp.SystemFingerprint, ServiceTier: resp.ServiceTier}}}
	logprobs := resp.Logprobs // the whole answer's: on the first text delta only, as the router replays
	for i, b := range resp.Message.Content {
		switch {
		case b.ToolUse != nil:
			in := string(b.ToolUse.Input)
			evs = append(evs, router.StreamEvent{Kind: router.EventBlockStart, Index: i, ToolUse: &router.ToolUse{ID: b.ToolUse.ID, Name: b.ToolUse.Name}},
				router.StreamEvent{Kind: router.EventBlockDelta, Index: i, ToolInput: in[:len(in)/2]},
				router.StreamEvent{Kind: router.EventBlockDelta, Index: i, ToolInput: in[len(in)/2:]})
		default:
			h := len(b.Text) / 2
			evs = append(evs, router.StreamEvent{Kind: router.EventBlockDelta, Index: i, Text: b.Text[:h], Logprobs: logprobs},
				router.StreamEvent{Kind: router.EventBlockDelta, Index: i, Text: b.Text[h:]})
			logprobs = nil
		}
		evs = append(evs, router.StreamEvent{Kind: router.EventBlockStop, Index: i})
	}
	return append(evs, router.StreamEvent{Kind: router.EventMessageStop, StopReason: resp.StopReason},
		router.StreamEvent{Kind: router.EventMetadata, Usage: resp.Usage})
}

func reply(model string, rep Reply) *router.Response {
	resp := &router.Response{Model: model, StopReason: router.StopEndTurn, Usage: rep.Usage, Message: router.Message{Role: router.RoleAssistant},
		Logprobs: rep.Logprobs, SystemFingerprint: rep.SystemFingerprint, ServiceTier: rep.ServiceTier}
	if resp.Usage == (router.Usage{}) {
		resp.Usage = router.Usage{InputTokens: 12, OutputTokens: 3}
	}
	if rep.Text != "" || rep.ToolUse == nil {
		resp.Message.Content = append(resp.Message.Content, router.Block{Text: rep.Text})
	}
	if rep.StopReason != "" {
		resp.StopReason = rep.StopReason
	}
	if rep.ToolUse != nil {
		resp.StopReason = router.StopToolUse
		resp.Message.Content = append(resp.Message.Content, router.Block{ToolUse: rep.ToolUse})
	}
	return resp
}

// BedrockProvider is a Bedrock provider pointed at s with test credentials and SDK
// retries off, built the way fleet-worker builds its own.
func BedrockProvider(s *Server) *bedrock.Provider {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}
	return &bedrock.Provider{API: bedrock.NewClient(cfg, s.URL, nil)}
}

// OpenAIProvider is an OpenAI-compatible provider pointed at s.
func OpenAIProvider(s *Server, key string) *openai.Client {
	return &openai.Client{BaseURL: s.URL + "/v1", APIKey: key}
}
