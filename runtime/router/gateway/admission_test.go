package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
)

// held is an upstream whose calls wait until the test lets them go, each at least hold
// long: what it holds fills the policy's in-flight slot and waiting room.
type held struct {
	text    string // the answer ("ok" when empty)
	hold    time.Duration
	release chan struct{}
	calls   atomic.Int64
}

func (*held) System() string { return "fake" }

func (h *held) Chat(ctx context.Context, _ string, _ *router.Request) (*router.Response, error) {
	h.calls.Add(1)
	time.Sleep(h.hold)
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	text := h.text
	if text == "" {
		text = "ok"
	}
	return &router.Response{Model: "m", StopReason: router.StopEndTurn, Message: router.Message{Role: router.RoleAssistant, Content: []router.Block{{Text: text}}}}, nil
}

func heldGateway(t *testing.T, h *held, maxInFlight, maxWaiting int) *gateway.Gateway {
	t.Helper()
	r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "fake/m", Model: "m", Provider: h}},
		Timeout: 10 * time.Second, AllowedFails: 100, Cooldown: time.Minute, MaxInFlight: maxInFlight}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.StartWith(r, "p", "127.0.0.1:0", 10*time.Second, gateway.Options{MaxWaiting: maxWaiting})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	return gw
}

// fill sends n requests that stay in the gateway until h releases them, and waits until
// the gateway holds them all (the first `slots` at the upstream, the rest waiting).
func fill(t *testing.T, gw *gateway.Gateway, h *held, n, slots int) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := post(gw, "/v1/chat/completions", `{"model":"p","messages":[{"role":"user","content":"x"}]}`); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); h.calls.Load() < int64(slots); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("upstream got %d calls, want %d in flight", h.calls.Load(), slots)
		}
	}
	time.Sleep(50 * time.Millisecond) // the rest reach the router's queue
	return &wg
}

// TestAdmissionRefusesPastTheWaitingRoomAtOnce: a policy with max_in_flight 2 and 4 waiting
// holds 6 requests; the 7th is answered at once with a 429 (the openai SDKs' rate-limit
// shape), without a retry-after while nothing was measured, and with the measured one
// (the 4 waiting requests served two at a time: two rounds of the upstream's hold time) once calls
// completed; the upstream never sees the refused ones.
func TestAdmissionRefusesPastTheWaitingRoomAtOnce(t *testing.T) {
	h := &held{hold: 300 * time.Millisecond, release: make(chan struct{})}
	gw := heldGateway(t, h, 2, 4)
	wg := fill(t, gw, h, 6, 2)
	start := time.Now()
	a := ask(t, gw, false)
	if a.status != http.StatusTooManyRequests || a.code != "rate_limit_exceeded" || a.shouldRetry != "true" {
		t.Fatalf("7th request: %+v, want 429 rate_limit_exceeded, x-should-retry true", a)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("the refusal took %v: it must not wait", took)
	}
	if a.retryAfter != "" || a.retryAfterMs != "" {
		t.Errorf("retry-after %q / %q before any call was measured: nothing to base it on", a.retryAfter, a.retryAfterMs)
	}
	close(h.release)
	wg.Wait()
	if n := h.calls.Load(); n != 6 {
		t.Errorf("upstream calls: %d, want the 6 admitted", n)
	}

	// Now the service time is known (300 ms a call and a little more): 4 waiting, 2 at a time.
	h.release = make(chan struct{})
	h.calls.Store(0)
	wg = fill(t, gw, h, 6, 2)
	a = ask(t, gw, false)
	close(h.release)
	wg.Wait()
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("7th request again: %+v", a)
	}
	ra := a.ms(t)
	// 4 waiting / 2 slots = 2 rounds of a bit over 300 ms.
	if ra < 600*time.Millisecond || ra > 1100*time.Millisecond {
		t.Errorf("retry-after-ms %v, want about two 300 ms service times", ra)
	}
	if s, _ := strconv.Atoi(a.retryAfter); s != 1 {
		t.Errorf("Retry-After %q, want 1 (seconds, rounded up)", a.retryAfter)
	}
}

// spender answers at once and reports tokens tokens used.
type spender struct{ tokens int }

func (spender) System() string { return "fake" }
func (s spender) Chat(context.Context, string, *router.Request) (*router.Response, error) {
	return &router.Response{Model: "m", StopReason: router.StopEndTurn, Usage: router.Usage{InputTokens: s.tokens},
		Message: router.Message{Role: router.RoleAssistant, Content: []router.Block{{Text: "ok"}}}}, nil
}

// TestAdmissionRetryAfterIsTheRoutersComeback: a policy with tokens_per_minute 60 whose first
// call spent 120 tokens has an empty bucket for about a minute; the next calls wait for it
// (max_in_flight 1, 2 waiting), and the one past the bound is told the router's own wait,
// about 60 s, not the service time of the one fast call measured.
func TestAdmissionRetryAfterIsTheRoutersComeback(t *testing.T) {
	r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "fake/m", Model: "m", Provider: spender{120}}},
		Timeout: 10 * time.Second, AllowedFails: 100, Cooldown: time.Minute, MaxInFlight: 1, TokensPerMinute: 60}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.StartWith(r, "p", "127.0.0.1:0", 5*time.Minute, gateway.Options{MaxWaiting: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); gw.Close(context.Background()) })
	if a := ask(t, gw, false); a.status != 0 && a.status != http.StatusOK {
		t.Fatalf("first call: %+v", a)
	}
	// Three calls wait for the bucket (the slot, then the refill): the bound is full.
	for range 3 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL()+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+gw.Token())
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	a := ask(t, gw, false)
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("call past the bound: %+v", a)
	}
	if ra := a.ms(t); ra < 55*time.Second || ra > 62*time.Second {
		t.Errorf("retry-after-ms %v, want the bucket's refill, about 60 s", ra)
	}
}
