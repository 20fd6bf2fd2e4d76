package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/apikey"
	"github.com/fleetc/fleetc/runtime/router/openai"
)

// The key was rotated and the re-read after the 401 failed (Secrets Manager unreachable for
// a moment): whether a new key exists is unknown, so the router's answer is retryable, not
// ModelRequestRejected (which the worker dead-letters on the first attempt). The same holds
// for a 401 soon after, inside RefetchAfter, that does not read again. The upstream is an
// httptest server answering as OpenAI documents a refused key (401, invalid_api_key).
func TestRejectedKeyWithFailedReReadIsRetryable(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-new" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			return
		}
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	var reads atomic.Int32
	keys, err := apikey.New(context.Background(), func(context.Context) (string, error) {
		switch reads.Add(1) {
		case 1:
			return "sk-old", nil
		case 2:
			return "", errors.New("reading secret k: dial tcp: connection refused")
		}
		return "sk-new", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New([]router.Policy{{Name: "p", Timeout: 5 * time.Second, AllowedFails: 100,
		Deployments: []router.Deployment{{Name: "openai/m", Model: "m", Provider: &openai.Client{BaseURL: up.URL + "/v1", Keys: keys}}}}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := &router.Request{Messages: []router.Message{{Role: "user", Content: []router.Block{{Text: "hi"}}}}}
	for i := 1; i <= 2; i++ {
		_, err := r.Chat(context.Background(), "p", req)
		var re *retry.Error
		if !errors.As(err, &re) || !re.Retryable {
			t.Errorf("call %d after a failed key re-read: %v (%s), want a retryable error", i, err, fmt.Sprintf("%+v", re))
		}
		if re != nil && strings.Contains(re.Message, "sk-") {
			t.Errorf("call %d: the error quotes a key: %s", i, re.Message)
		}
	}
}
