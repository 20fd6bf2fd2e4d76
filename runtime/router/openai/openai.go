// Package openai is the router's OpenAI-compatible chat-completions provider (OpenAI,
// a LiteLLM proxy, vLLM, local servers) and the wire shapes fleet-worker's gateway
// serves. One POST {base_url}/chat/completions per Chat; no retries of its own.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/apikey"
)

// Client calls one OpenAI-compatible endpoint.
type Client struct {
	BaseURL string // e.g. https://api.openai.com/v1 (no trailing /chat/completions)
	APIKey  string // sent as a bearer token when set; read from the environment, never the spec
	// Keys, when set, supplies the bearer token instead of APIKey: a key read from Secrets
	// Manager or SSM, re-read after a 401 so a rotated key is picked up.
	Keys *apikey.Source
	HTTP *http.Client
}

// System is the OpenTelemetry gen_ai.provider.name.
func (c *Client) System() string { return "openai" }

// Chat makes one chat-completions call.
func (c *Client) Chat(ctx context.Context, model string, req *router.Request) (*router.Response, error) {
	hresp, err := c.post(ctx, FromRouterRequest(model, req))
	if err != nil {
		return nil, err
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(hresp.Body, router.MaxResponseBytes+1))
	if err != nil {
		return nil, &router.ProviderError{Err: err}
	}
	if len(raw) > router.MaxResponseBytes {
		return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput",
			Message: fmt.Sprintf("chat completion over %d bytes (router.MaxResponseBytes)", router.MaxResponseBytes)}
	}
	var cr ChatResponse
	if err := json.Unmarshal(raw, &cr); err != nil || len(cr.Choices) == 0 {
		return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: fmt.Sprintf("chat completion without choices: %s", truncate(string(raw), 256))}
	}
	return cr.ToRouter()
}

// ChatStream makes one streamed call (stream: true, with usage in the last chunk).
func (c *Client) ChatStream(ctx context.Context, model string, req *router.Request) (router.Stream, error) {
	cr := FromRouterRequest(model, req)
	cr.Stream, cr.StreamOptions = true, &StreamOptions{IncludeUsage: true}
	hresp, err := c.post(ctx, cr)
	if err != nil {
		return nil, err
	}
	if ct := hresp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		hresp.Body.Close()
		return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: "stream answered with Content-Type " + ct}
	}
	return NewSSEReader(hresp.Body), nil
}

// post sends the request; a non-2xx answer is read and returned as its *ProviderError. A
// 401 to a key from Keys re-reads the key (once per burst, see apikey) and, when it changed,
// sends the request once more with the new one.
func (c *Client) post(ctx context.Context, cr *ChatRequest) (*http.Response, error) {
	body, err := json.Marshal(cr)
	if err != nil {
		return nil, &router.ProviderError{Status: 400, Code: "InvalidRequest", Message: err.Error()}
	}
	key := c.APIKey
	if c.Keys != nil {
		key = c.Keys.Key()
	}
	hresp, err := c.send(ctx, body, key)
	if err == nil || c.Keys == nil {
		return hresp, err
	}
	var pe *router.ProviderError
	if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized {
		return nil, err
	}
	fresh, changed, ferr := c.Keys.Rejected(ctx, key)
	if ferr != nil {
		// Whether the key was rotated is unknown: a transient refusal (the router retries,
		// the worker holds the step), not a final one dead-lettered on its first attempt.
		pe.Message += " (re-reading the API key failed: " + ferr.Error() + ")"
		pe.Transient = true
	}
	if !changed {
		return nil, pe
	}
	return c.send(ctx, body, fresh)
}

// send makes one POST with key as the bearer token ("" = none).
func (c *Client) send(ctx context.Context, body []byte, key string) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, &router.ProviderError{Status: 400, Code: "InvalidRequest", Message: err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		return nil, &router.ProviderError{Err: err}
	}
	if hresp.StatusCode/100 != 2 {
		defer hresp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(hresp.Body, 1<<20))
		pe := errorFrom(hresp.StatusCode, hresp.Header, raw)
		if pe.Status == http.StatusUnauthorized {
			// OpenAI's invalid_api_key message quotes the key's first and last characters:
			// it would reach logs, spans and the dead letter.
			pe.Message = KeyRefused
		}
		return nil, pe
	}
	return hresp, nil
}

// KeyRefused is a 401's message, in place of the upstream's (which may quote the key).
const KeyRefused = "the upstream refused the API key (401)"

// OpenAI's error codes for its two kinds of 429: a rate limit (requests or tokens per
// minute, type "requests" or "tokens"), which clears by itself, and the spent quota, which
// does not (type and code insufficient_quota).
const (
	RateLimitExceeded = "rate_limit_exceeded"
	InsufficientQuota = "insufficient_quota"
)

// errorFrom reads an error answer: OpenAI's {"error":{message,type,code}}, vLLM's (code
// a number, or the fields at the top level) and LiteLLM's (the upstream's class name in
// the message) alike.
func errorFrom(status int, h http.Header, raw []byte) *router.ProviderError {
	var eb struct {
		Error   *wireError `json:"error"`
		Message string     `json:"message"`
		Type    string     `json:"type"`
		Code    any        `json:"code"`
	}
	_ = json.Unmarshal(raw, &eb)
	we := wireError{Message: eb.Message, Type: eb.Type, Code: eb.Code}
	if eb.Error != nil {
		we = *eb.Error
	}
	code, _ := we.Code.(string)
	pe := router.FromHTTP(status, h, code, we.Message)
	if pe.Code == "" {
		pe.Code = we.Type
	}
	if pe.Message == "" {
		pe.Message = truncate(string(raw), 512)
	}
	// A 429 OpenAI names a rate limit (requests or tokens per minute) clears by itself:
	// retried or fallen back even without Retry-After. Only insufficient_quota (and a
	// 429 that names nothing and no retry-after) is the spend limit.
	pe.RateLimited = status == http.StatusTooManyRequests && (code == RateLimitExceeded || we.Type == "requests" || we.Type == "tokens")
	// insufficient_quota is the spend limit whatever else the answer says (a proxy may add a
	// retry-after to it): waiting does not refill the account.
	pe.Quota = code == InsufficientQuota || we.Type == InsufficientQuota
	pe.ContextWindow = status == http.StatusBadRequest && (router.ContextWindowMessage(code) || router.ContextWindowMessage(we.Message))
	return pe
}

type wireError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"` // a string at OpenAI, a number at vLLM
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
