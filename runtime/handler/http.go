package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// HTTP posts each step's input to a sidecar. 2xx is success (the body is the
// result JSON) unless the body is the {"error":{"code",...}} failure, which decides as it
// does for exec; 5xx, 408, 409 and 429-with-Retry-After are retryable; a 429
// without Retry-After (spend limit) and other 4xx are not.
type HTTP struct {
	URL    string
	Client *http.Client
	// ModelGateway, when set, is sent as X-Fleet-Model-Gateway: the OpenAI-compatible
	// base URL of fleet-worker's model gateway (on loopback, which a sidecar in the same
	// pod shares).
	ModelGateway string
	// ModelGatewayToken is the gateway's bearer token, sent as HeaderModelGatewayToken.
	ModelGatewayToken string
}

// HeaderModelGatewayToken carries the model gateway's bearer token to a sidecar with each
// step request (the sidecar sends it back as Authorization: Bearer).
const HeaderModelGatewayToken = "X-Fleet-Model-Gateway-Token"

// NewHTTP checks the URL; client nil means a plain client (no retries: the
// queue is the retry layer; the deadline comes from the context).
func NewHTTP(u string, client *http.Client) (*HTTP, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("http handler: bad url %q", u)
	}
	if client == nil {
		client = &http.Client{}
	}
	return &HTTP{URL: u, Client: client}, nil
}

// Handle makes one POST.
func (h *HTTP) Handle(ctx context.Context, req Request) (json.RawMessage, error) {
	body := req.Input
	if len(body) == 0 {
		body = json.RawMessage("null")
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return nil, retry.Permanent(wire.BadRequest, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Idempotency-Key", req.Key)
	hr.Header.Set("X-Fleet-Class", req.Class)
	hr.Header.Set("X-Fleet-Attempt", strconv.Itoa(req.Attempt))
	if req.TraceID != "" {
		hr.Header.Set(wire.HeaderTraceID, req.TraceID)
	}
	if req.TraceParent != "" {
		hr.Header.Set("traceparent", req.TraceParent)
	}
	if !req.Deadline.IsZero() {
		hr.Header.Set("X-Fleet-Deadline", req.Deadline.UTC().Format(time.RFC3339Nano))
	}
	if h.ModelGateway != "" {
		hr.Header.Set("X-Fleet-Model-Gateway", h.ModelGateway)
		hr.Header.Set(HeaderModelGatewayToken, h.ModelGatewayToken)
	}
	resp, err := h.Client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &retry.Error{Code: wire.Timeout, Message: err.Error(), Retryable: true, Err: ctx.Err()}
		}
		return nil, retry.Retryable(wire.Unavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &retry.Error{Code: wire.Timeout, Message: err.Error(), Retryable: true, Err: ctx.Err()}
		}
		return nil, retry.Retryable(wire.ReadFailed, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if len(raw) > maxOutput {
			return nil, &retry.Error{Code: wire.OutputTooLarge, Message: fmt.Sprintf("body above %d bytes", maxOutput)}
		}
		out := bytes.TrimSpace(raw)
		if len(out) == 0 {
			return json.RawMessage("null"), nil
		}
		if !json.Valid(out) {
			return nil, &retry.Error{Code: wire.BadOutput, Message: "response is not JSON: " + trunc(string(out), 256)}
		}
		if e := answerFailure(out, "the response"); e != nil {
			return nil, e
		}
		return json.RawMessage(out), nil
	}
	e := retry.FromResponse(resp.StatusCode, resp.Header, trunc(string(raw), 512))
	// A sidecar may name its error; the status still decides retryability.
	if f := parseFailure(raw); f != nil {
		e.Message = string(f.Code) + ": " + f.Message
	}
	return nil, e
}
