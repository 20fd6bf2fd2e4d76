package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router/bedrock/converse"
	"github.com/fleetc/fleetc/runtime/router/gateway/gatewayenv"
)

// modelClass is the name the model stand-in's lines carry in the interleaved log.
const modelClass = "model"

// modelStandIn is dev's Bedrock Runtime: no emulator serves Bedrock, so every worker's
// model router (FLEET_BEDROCK_ENDPOINT) calls this server, which answers the Converse API
// (POST /model/{modelId}/converse) with a short text, or, during a 429 wave, what Bedrock
// answers when it throttles: 429 with X-Amzn-ErrorType ThrottlingException, naming when to
// come back (Retry-After and retry-after-ms) as a rate-limited provider does, so the wave
// reaches the worker as a throttle, not a spend limit. Each
// worker's gateway then does what it does in AWS (its policy's retries, cooldown and
// fallbacks) and answers its handler with the failure when they are spent.
type modelStandIn struct {
	srv  *http.Server
	addr string

	mu                 sync.Mutex
	until              time.Time // end of the current 429 wave
	calls, throttled   int
	waves              int
	streamsUnsupported int
}

// ModelView is the stand-in's state for the page.
type ModelView struct {
	Endpoint  string     `json:"endpoint"`
	Calls     int        `json:"calls"`
	Throttled int        `json:"throttled"`
	WaveUntil *time.Time `json:"wave_until,omitempty"`
	Waves     int        `json:"waves"`
}

func startModelStandIn() (*modelStandIn, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model stand-in: %w", err)
	}
	m := &modelStandIn{addr: l.Addr().String()}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(l) }()
	return m, nil
}

func (m *modelStandIn) endpoint() string { return "http://" + m.addr }

func (m *modelStandIn) close() { _ = m.srv.Close() }

// wave makes every call answer 429 for d.
func (m *modelStandIn) wave(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.until = time.Now().Add(d)
	m.waves++
}

func (m *modelStandIn) view(now time.Time) ModelView {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := ModelView{Endpoint: m.endpoint(), Calls: m.calls, Throttled: m.throttled, Waves: m.waves}
	if now.Before(m.until) {
		u := m.until.UTC()
		v.WaveUntil = &u
	}
	return v
}

// bedrockError is Bedrock Runtime's error body ({"message"}), its type in X-Amzn-ErrorType.
func bedrockError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// WaveRetryAfter is the most a 429 of a wave asks to wait: a rate-limited provider names its
// next window, a few seconds, not the end of the outage; so a wave longer than the router's
// retries reaches its cooldown and then the worker, as a real one does.
const WaveRetryAfter = 3 * time.Second

func (m *modelStandIn) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
	if r.Method != http.MethodPost || !ok {
		bedrockError(w, http.StatusNotFound, "UnknownOperationException", "fleetc dev's model stand-in serves POST /model/{modelId}/converse")
		return
	}
	model, isConverse := strings.CutSuffix(rest, "/converse")
	model, _ = url.PathUnescape(model)
	m.mu.Lock()
	m.calls++
	left := time.Until(m.until)
	throttle := left > 0
	if throttle {
		m.throttled++
	} else if !isConverse {
		m.streamsUnsupported++
	}
	m.mu.Unlock()
	if throttle {
		retry.SetRetryAfterHeaders(w.Header(), min(left, WaveRetryAfter))
		bedrockError(w, http.StatusTooManyRequests, "ThrottlingException", "Too many requests, please wait before trying again. (fleetc dev: 429 wave)")
		return
	}
	if !isConverse {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "fleetc dev's model stand-in answers Converse only, not ConverseStream")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var in *converse.Request
	if err == nil {
		in, err = converse.DecodeRequest(body)
	}
	if err != nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "request body: "+err.Error())
		return
	}
	text := fmt.Sprintf("stand-in answer from %s (fleetc dev has no Bedrock) to %d message(s)", model, len(in.Messages))
	resp := converse.Response{StopReason: "end_turn",
		Usage: converse.Usage{InputTokens: len(body) / 4, OutputTokens: len(text) / 4, TotalTokens: len(body)/4 + len(text)/4}}
	resp.Output.Message = converse.Message{Role: converse.RoleAssistant, Content: []converse.Block{{Text: &text}}}
	resp.Metrics.LatencyMs = 1
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&resp)
}

// askModel is the stand-in handler's one model call per step, through the worker's model
// gateway as a real handler's would go (Bedrock Converse wire, the gateway's token): the
// gateway picks the class's policy. It returns the answer's text, or the gateway's failure
// (a *retry.Error when the gateway answered).
func askModel(ctx context.Context, base, token, input string) (string, error) {
	text := "one step of fleetc dev's stand-in handler; its input: " + input
	if len(text) > 2000 {
		text = text[:2000]
	}
	req, _ := json.Marshal(converse.Request{Messages: []converse.Message{{Role: converse.RoleUser, Content: []converse.Block{{Text: &text}}}}})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/model/class-policy/converse", bytes.NewReader(req))
	if err != nil {
		return "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		// Classified as the worker classifies a dependency's answer: a 429 or 503 naming its
		// retry-after is a throttle, a 429 without one a spend limit.
		e := retry.FromResponse(resp.StatusCode, resp.Header, string(b))
		e.Message = fmt.Sprintf("the model gateway answered %d %s: %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), bytes.TrimSpace(b))
		return "", e
	}
	var out converse.Response
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("the model gateway's answer: %w", err)
	}
	var s strings.Builder
	for _, c := range out.Output.Message.Content {
		if c.Text != nil {
			s.WriteString(*c.Text)
		}
	}
	return s.String(), nil
}

// gatewayEnv is the model gateway a worker gave its exec handler ("" when the class has no
// model policy).
func gatewayEnv() (base, token string) {
	return os.Getenv(gatewayenv.BedrockURL), os.Getenv(gatewayenv.Token)
}
