package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// These tests run the router against fake servers that speak the Bedrock Converse and
// OpenAI chat-completions wire formats (see routertest: no Bedrock emulator exists).

func pol(name string, p router.Provider, model string, mod func(*router.Policy)) router.Policy {
	po := router.Policy{Name: name, Deployments: []router.Deployment{{Name: name + "/" + model, Model: model, Provider: p}},
		Retries: 2, Timeout: 2 * time.Second, AllowedFails: 2, Cooldown: time.Minute,
		BackoffBase: 5 * time.Millisecond, BackoffCap: 20 * time.Millisecond}
	if mod != nil {
		mod(&po)
	}
	return po
}

func ask(text string) *router.Request {
	return &router.Request{System: "be brief", MaxTokens: 64,
		Messages: []router.Message{{Role: router.RoleUser, Content: []router.Block{{Text: text}}}}}
}

func callN(t *testing.T, r *router.Router, policy string, n, parallel int) (ok int, errs []error) {
	t.Helper()
	var mu sync.Mutex
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := r.Chat(ctx, policy, ask("hello"))
			mu.Lock()
			defer mu.Unlock()
			if err == nil && resp.Text() != "" {
				ok++
			} else {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return ok, errs
}

func TestHardDownBedrockPrimaryOpenAIFallback30of30(t *testing.T) {
	for _, withFallback := range []bool{false, true} {
		down := rt.Bedrock(t, rt.Always(rt.Reply{Status: 503, ErrorCode: "ServiceUnavailableException"}))
		spare := rt.OpenAI(t, "sk-test", rt.Always(rt.Reply{Text: "from the fallback"}))
		var fb []string
		if withFallback {
			fb = []string{"overflow"}
		}
		r, err := router.New([]router.Policy{
			pol("fast", rt.BedrockProvider(down), "us.anthropic.claude-haiku-4-5", func(p *router.Policy) { p.Fallbacks = fb }),
			pol("overflow", rt.OpenAIProvider(spare, "sk-test"), "gpt-4o-mini", func(p *router.Policy) { p.MaxInFlight = 8 }),
		}, router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ok, errs := callN(t, r, "fast", 30, 1)
		if withFallback {
			if ok != 30 {
				t.Fatalf("primary hard down with a cross-group fallback: %d/30 succeeded (%v)", ok, errs)
			}
		} else {
			if ok == 30 {
				t.Fatal("in-group retries alone answered every request from a hard-down group")
			}
			var re *retry.Error
			if !errors.As(errs[0], &re) || re.Code != router.CodeModelUnavailable || !re.Retryable {
				t.Fatalf("in-group only: %v, want retryable ModelUnavailable (the queue retries the step)", errs[0])
			}
			t.Logf("in-group retries alone: %d/30 succeeded", ok)
		}
		// allowed_fails 2: the third failure benches the deployment for the cooldown;
		// no request reaches it after that.
		if down.Calls() != 3 {
			t.Fatalf("fallback=%v: the hard-down primary got %d calls, want 3", withFallback, down.Calls())
		}
		if m := down.Models()[0]; m != "us.anthropic.claude-haiku-4-5" {
			t.Fatalf("model id on the wire %q", m)
		}
	}
}

func TestConcurrentHardDownNoCallDuringCooldownAndCapsHold(t *testing.T) {
	down := rt.Bedrock(t, rt.Always(rt.Reply{Status: 500, ErrorCode: "InternalServerException", Delay: 10 * time.Millisecond}))
	spare := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "spare", Delay: 30 * time.Millisecond}))
	r, _ := router.New([]router.Policy{
		pol("fast", rt.BedrockProvider(down), "m1", func(p *router.Policy) { p.Fallbacks = []string{"overflow"}; p.MaxInFlight = 4 }),
		pol("overflow", rt.OpenAIProvider(spare, ""), "m2", func(p *router.Policy) { p.MaxInFlight = 3 }),
	}, router.Options{})
	ok, errs := callN(t, r, "fast", 30, 30)
	if ok != 30 {
		t.Fatalf("%d/30 (%v)", ok, errs)
	}
	// Calls already in flight when the deployment tripped may land (at most the cap, 4);
	// nothing after.
	if c := down.Calls(); c > 3+4 {
		t.Fatalf("primary got %d calls; after the cooldown began only in-flight ones (≤ 4 more) may arrive", c)
	}
	if down.MaxInFlight() > 4 || spare.MaxInFlight() > 3 {
		t.Fatalf("in flight: primary %d (cap 4), fallback %d (cap 3)", down.MaxInFlight(), spare.MaxInFlight())
	}
	if spare.MaxInFlight() < 3 {
		t.Fatalf("the fallback peaked at %d in flight: the test did not push it to its cap", spare.MaxInFlight())
	}
}

func TestRateLimitWavesRetryAfterHonouredAndCapped(t *testing.T) {
	// A 429 wave with retry-after on Bedrock: calls 1..10 are throttled, then it recovers.
	wave := rt.Bedrock(t, func(n int, _ *router.Request) rt.Reply {
		if n <= 10 {
			return rt.Reply{Status: 429, ErrorCode: "ThrottlingException", RetryAfter: "1"}
		}
		return rt.Reply{Text: "primary", Delay: 20 * time.Millisecond}
	})
	spare := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "spare", Delay: 20 * time.Millisecond}))
	r, _ := router.New([]router.Policy{
		pol("fast", rt.BedrockProvider(wave), "m1", func(p *router.Policy) {
			p.Fallbacks, p.MaxInFlight, p.AllowedFails, p.Retries = []string{"overflow"}, 5, 100, 1
		}),
		pol("overflow", rt.OpenAIProvider(spare, ""), "m2", func(p *router.Policy) { p.MaxInFlight = 2 }),
	}, router.Options{})
	start := time.Now()
	ok, errs := callN(t, r, "fast", 20, 20)
	if ok != 20 {
		t.Fatalf("%d/20 (%v)", ok, errs)
	}
	if wave.MaxInFlight() > 5 || spare.MaxInFlight() > 2 {
		t.Fatalf("in flight: primary %d (cap 5), fallback %d (cap 2)", wave.MaxInFlight(), spare.MaxInFlight())
	}
	// The retry-after was honoured: the throttled deployment saw no request for a second
	// after its last 429, so the wave's first 10 calls are followed by a gap.
	if wave.Calls() > 10 && time.Since(start) < time.Second {
		t.Fatalf("primary called again %v after a retry-after: 1", time.Since(start))
	}
}

func TestSpendLimit429NotRetriedOverTheWire(t *testing.T) {
	spent := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, ErrorCode: "insufficient_quota"}))
	spare := rt.Bedrock(t, rt.Always(rt.Reply{Text: "spare"}))
	r, _ := router.New([]router.Policy{
		pol("p", rt.OpenAIProvider(spent, ""), "gpt", func(p *router.Policy) { p.Fallbacks = []string{"q"} }),
		pol("q", rt.BedrockProvider(spare), "m", nil),
	}, router.Options{})
	_, err := r.Chat(context.Background(), "p", ask("x"))
	var re *retry.Error
	if !errors.As(err, &re) || re.Code != router.CodeSpendLimit || re.Retryable || re.Status != 429 {
		t.Fatalf("err %#v: want a final SpendLimit", err)
	}
	if spent.Calls() != 1 || spare.Calls() != 0 {
		t.Fatalf("calls %d / %d: a spend-limit 429 is never retried", spent.Calls(), spare.Calls())
	}
}

func TestOverloaded529AndSlowAnswers(t *testing.T) {
	over := rt.OpenAI(t, "", func(n int, _ *router.Request) rt.Reply {
		if n == 1 {
			return rt.Reply{Status: 529, ErrorCode: "overloaded_error"}
		}
		return rt.Reply{Text: "second try"}
	})
	r, _ := router.New([]router.Policy{pol("p", rt.OpenAIProvider(over, ""), "m", nil)}, router.Options{})
	resp, err := r.Chat(context.Background(), "p", ask("x"))
	if err != nil || resp.Text() != "second try" || over.Calls() != 2 {
		t.Fatalf("529 then ok: %v %v (%d calls)", resp, err, over.Calls())
	}
	slow := rt.Bedrock(t, rt.Always(rt.Reply{Text: "late", Delay: 3 * time.Second}))
	quick := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "quick"}))
	r2, _ := router.New([]router.Policy{
		pol("p", rt.BedrockProvider(slow), "m", func(p *router.Policy) { p.Timeout = 150 * time.Millisecond; p.Retries = 0; p.Fallbacks = []string{"q"} }),
		pol("q", rt.OpenAIProvider(quick, ""), "m", nil),
	}, router.Options{})
	start := time.Now()
	resp, err = r2.Chat(context.Background(), "p", ask("x"))
	if err != nil || resp.Text() != "quick" || time.Since(start) > 2*time.Second {
		t.Fatalf("slow primary: %v %v after %v", resp, err, time.Since(start))
	}
}

func TestBedrockToolUseOnTheWire(t *testing.T) {
	srv := rt.Bedrock(t, func(n int, req *router.Request) rt.Reply {
		if n == 1 {
			if len(req.Tools) != 1 || req.Tools[0].Name != "lookup" || req.System != "be brief" || req.MaxTokens != 64 {
				t.Errorf("first request: tools %+v system %q max %d", req.Tools, req.System, req.MaxTokens)
			}
			return rt.Reply{ToolUse: &router.ToolUse{ID: "tu-1", Name: "lookup", Input: json.RawMessage(`{"q":"x"}`)}}
		}
		last := req.Messages[len(req.Messages)-1]
		if len(req.Messages) != 3 || last.Content[0].ToolResult == nil || last.Content[0].ToolResult.ID != "tu-1" || last.Content[0].ToolResult.Content != "42" {
			t.Errorf("second request does not carry the tool result: %+v", req.Messages)
		}
		return rt.Reply{Text: "it is 42", Usage: router.Usage{InputTokens: 100, OutputTokens: 7}}
	})
	r, _ := router.New([]router.Policy{pol("p", rt.BedrockProvider(srv), "anthropic.claude", nil)}, router.Options{})
	req := ask("what is x?")
	req.Tools = []router.Tool{{Name: "lookup", Description: "look it up", Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
	resp, err := r.Chat(context.Background(), "p", req)
	if err != nil || resp.StopReason != router.StopToolUse || len(resp.ToolUses()) != 1 || string(resp.ToolUses()[0].Input) != `{"q":"x"}` {
		t.Fatalf("%+v %v", resp, err)
	}
	req.Messages = append(req.Messages, resp.Message, router.Message{Role: router.RoleUser, Content: []router.Block{{ToolResult: &router.ToolResult{ID: "tu-1", Content: "42"}}}})
	resp, err = r.Chat(context.Background(), "p", req)
	if err != nil || resp.Text() != "it is 42" || resp.Usage.InputTokens != 100 || resp.StopReason != router.StopEndTurn {
		t.Fatalf("%+v %v", resp, err)
	}
}

func TestBedrockContextWindowError(t *testing.T) {
	srv := rt.Bedrock(t, rt.Always(rt.Reply{Status: 400, ErrorCode: "ValidationException", Message: "Input is too long for requested model."}))
	_, err := rt.BedrockProvider(srv).Chat(context.Background(), "m", ask("x"))
	var pe *router.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Code != "ValidationException" || !pe.ContextWindow {
		t.Fatalf("%#v", err)
	}
	oa := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 400, ErrorCode: "context_length_exceeded"}))
	_, err = rt.OpenAIProvider(oa, "").Chat(context.Background(), "m", ask("x"))
	if !errors.As(err, &pe) || !pe.ContextWindow {
		t.Fatalf("%#v", err)
	}
}

// The cases over the wire: Bedrock ThrottlingException and OpenAI's
// rate_limit_exceeded, both without Retry-After, are retried then fallen back; OpenAI's
// insufficient_quota stays the final spend limit.
func TestThrottlingWithoutRetryAfterRetriedThenFallenBack(t *testing.T) {
	for name, primary := range map[string]func() (*rt.Server, router.Provider){
		"bedrock ThrottlingException": func() (*rt.Server, router.Provider) {
			s := rt.Bedrock(t, rt.Always(rt.Reply{Status: 429, ErrorCode: "ThrottlingException", Message: "Too many requests, please wait before trying again."}))
			return s, rt.BedrockProvider(s)
		},
		"bedrock ServiceQuotaExceededException": func() (*rt.Server, router.Provider) {
			s := rt.Bedrock(t, rt.Always(rt.Reply{Status: 400, ErrorCode: "ServiceQuotaExceededException"}))
			return s, rt.BedrockProvider(s)
		},
		"bedrock ModelErrorException": func() (*rt.Server, router.Provider) {
			s := rt.Bedrock(t, rt.Always(rt.Reply{Status: 424, ErrorCode: "ModelErrorException"}))
			return s, rt.BedrockProvider(s)
		},
		"openai rate_limit_exceeded": func() (*rt.Server, router.Provider) {
			s := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, Body: `{"error":{"message":"Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`}))
			return s, rt.OpenAIProvider(s, "")
		},
	} {
		srv, p := primary()
		spare := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "spare"}))
		r, _ := router.New([]router.Policy{
			pol("p", p, "m", func(p *router.Policy) { p.Fallbacks = []string{"q"}; p.AllowedFails = 100 }),
			pol("q", rt.OpenAIProvider(spare, ""), "m", nil),
		}, router.Options{})
		resp, err := r.Chat(context.Background(), "p", ask("x"))
		if err != nil || resp.Text() != "spare" || srv.Calls() != 3 || spare.Calls() != 1 {
			t.Errorf("%s: %v %v; primary %d calls (want 1 + 2 retries), fallback %d", name, resp, err, srv.Calls(), spare.Calls())
		}
	}
}

// Context-window errors in each server's wording: OpenAI's code, vLLM's (code a number,
// the message only), LiteLLM's, and Anthropic's behind an OpenAI-compatible proxy.
func TestContextWindowErrorWordings(t *testing.T) {
	for name, body := range map[string]string{
		"openai":    `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		"vllm":      `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}`,
		"vllm v1":   `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.","type":"BadRequestError","param":null,"code":400}}`,
		"litellm":   `{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: AnthropicException - prompt is too long","type":null,"param":null,"code":"400"}}`,
		"anthropic": `{"error":{"message":"input length and ` + "`max_tokens`" + ` exceed context limit: 197626 + 8192 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again","type":"invalid_request_error"}}`,
	} {
		oa := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 400, Body: body}))
		_, err := rt.OpenAIProvider(oa, "").Chat(context.Background(), "m", ask("x"))
		var pe *router.ProviderError
		if !errors.As(err, &pe) || !pe.ContextWindow || pe.Status != 400 {
			t.Errorf("%s: %#v, want a context-window error", name, err)
		}
	}
	oa := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 400, Body: `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","code":"invalid_value"}}`}))
	_, err := rt.OpenAIProvider(oa, "").Chat(context.Background(), "m", ask("x"))
	var pe *router.ProviderError
	if !errors.As(err, &pe) || pe.ContextWindow {
		t.Errorf("an ordinary 400 taken for a context-window error: %#v", err)
	}
}

// throttleOf is err as the queue sees it: its code, whether it is retryable, a throttle, and
// the wait it names.
func throttleOf(t *testing.T, err error) *retry.Error {
	t.Helper()
	var re *retry.Error
	if !errors.As(err, &re) {
		t.Fatalf("err %v (%T), want a *retry.Error", err, err)
	}
	return re
}

func chatWithin(r *router.Router, policy string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := r.Chat(ctx, policy, ask("hello"))
	return err
}

// When every deployment, fallbacks included, is benched after a rate limit, the step's error
// is a throttle naming the real wait until the first one is back. The primary imitates
// OpenAI's rate-limit 429 (error code rate_limit_exceeded) with both retry-after-ms and
// Retry-After, as Azure OpenAI sends them (the values differ so the test sees which one was
// read: retry-after-ms first); the fallback imitates Bedrock Runtime's 429
// ThrottlingException, which carries no retry-after, so its bench is the policy's cooldown.
func TestBenchedByThrottlesIsAThrottleWithTheRemainingCooldown(t *testing.T) {
	limited := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, ErrorCode: "rate_limit_exceeded", RetryAfterMs: "2500", RetryAfter: "4"}))
	throttling := rt.Bedrock(t, rt.Always(rt.Reply{Status: 429, ErrorCode: "ThrottlingException"}))
	r, err := router.New([]router.Policy{
		pol("fast", rt.OpenAIProvider(limited, ""), "gpt-4o-mini", func(p *router.Policy) {
			p.Fallbacks, p.Retries, p.AllowedFails, p.Cooldown = []string{"overflow"}, 0, 0, time.Minute
		}),
		pol("overflow", rt.BedrockProvider(throttling), "m2", func(p *router.Policy) {
			p.Retries, p.AllowedFails, p.Cooldown = 0, 0, 10*time.Second
		}),
	}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The primary's bench is its retry-after-ms (2.5 s), not its 60 s cooldown nor the 4 s of
	// Retry-After; the fallback's is its 10 s cooldown: the first back is the primary.
	re := throttleOf(t, chatWithin(r, "fast", 10*time.Second))
	if re.Code != router.CodeModelUnavailable || !re.Retryable || !re.Throttle || re.RetryAfter <= 1500*time.Millisecond || re.RetryAfter > 2500*time.Millisecond {
		t.Fatalf("both benched for a rate limit: %+v, want a throttle after ~2.5s", re)
	}
	if limited.Calls() != 1 || throttling.Calls() != 1 {
		t.Fatalf("calls: primary %d, fallback %d; want 1 each", limited.Calls(), throttling.Calls())
	}
	// A second step during the bench makes no call and is told what remains.
	time.Sleep(500 * time.Millisecond)
	re = throttleOf(t, chatWithin(r, "fast", 10*time.Second))
	if !re.Throttle || re.RetryAfter <= 1000*time.Millisecond || re.RetryAfter > 2000*time.Millisecond {
		t.Fatalf("0.5 s into the bench: %+v, want a throttle after ~2s", re)
	}
	if limited.Calls() != 1 || throttling.Calls() != 1 {
		t.Fatalf("a call during the bench: primary %d, fallback %d", limited.Calls(), throttling.Calls())
	}
}

// An outage (5xx without retry-after, a refused connection) benches for the cooldown and
// stays a retryable failure, not a throttle; when every deployment is benched it names the
// remaining bench, before which the router calls nothing. The first deployment back decides:
// a throttled primary back in 5 s behind an outage back in 1 s is an outage.
func TestBenchedByAnOutageStaysAFailure(t *testing.T) {
	// Bedrock Runtime's 503 ServiceUnavailableException, no retry-after.
	down := rt.Bedrock(t, rt.Always(rt.Reply{Status: 503, ErrorCode: "ServiceUnavailableException"}))
	gone := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "never"}))
	gone.Close() // every call is refused
	r, _ := router.New([]router.Policy{
		pol("fast", rt.BedrockProvider(down), "m1", func(p *router.Policy) {
			p.Fallbacks, p.Retries, p.AllowedFails, p.Cooldown = []string{"overflow"}, 0, 0, 3*time.Second
		}),
		pol("overflow", rt.OpenAIProvider(gone, ""), "m2", func(p *router.Policy) { p.Retries, p.AllowedFails, p.Cooldown = 0, 0, 5*time.Second }),
	}, router.Options{})
	re := throttleOf(t, chatWithin(r, "fast", 10*time.Second))
	if re.Code != router.CodeModelUnavailable || !re.Retryable || re.Throttle || re.RetryAfter <= 2*time.Second || re.RetryAfter > 3*time.Second {
		t.Fatalf("outage: %+v, want a retryable failure (no throttle) naming the ~3s bench", re)
	}

	// OpenAI's rate-limit 429 with retry-after-ms 5000 on the primary; the fallback is refused.
	limited := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, ErrorCode: "rate_limit_exceeded", RetryAfterMs: "5000"}))
	r, _ = router.New([]router.Policy{
		pol("fast", rt.OpenAIProvider(limited, ""), "m1", func(p *router.Policy) {
			p.Fallbacks, p.Retries, p.AllowedFails = []string{"overflow"}, 0, 0
		}),
		pol("overflow", rt.OpenAIProvider(gone, ""), "m2", func(p *router.Policy) { p.Retries, p.AllowedFails, p.Cooldown = 0, 0, time.Second }),
	}, router.Options{})
	re = throttleOf(t, chatWithin(r, "fast", 10*time.Second))
	if !re.Retryable || re.Throttle || re.RetryAfter <= 300*time.Millisecond || re.RetryAfter > time.Second {
		t.Fatalf("throttle behind a sooner outage: %+v, want a failure naming the ~1s bench", re)
	}
}

// OpenAI's insufficient_quota is the spend limit even when a retry-after comes with it (a
// proxy may add one): never retried, never fallen back, final for the queue. The server
// imitates OpenAI's 429 {"error":{"type":"insufficient_quota","code":"insufficient_quota"}}.
func TestInsufficientQuotaWithRetryAfterIsStillTheSpendLimit(t *testing.T) {
	spent := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, RetryAfter: "1", RetryAfterMs: "1000",
		Body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`}))
	spare := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "spare"}))
	r, _ := router.New([]router.Policy{
		pol("fast", rt.OpenAIProvider(spent, ""), "m1", func(p *router.Policy) { p.Fallbacks = []string{"overflow"} }),
		pol("overflow", rt.OpenAIProvider(spare, ""), "m2", nil),
	}, router.Options{})
	re := throttleOf(t, chatWithin(r, "fast", 10*time.Second))
	if re.Code != router.CodeSpendLimit || re.Retryable || re.Throttle || re.RetryAfter != 0 {
		t.Fatalf("insufficient_quota with retry-after: %+v, want a final SpendLimit", re)
	}
	if spent.Calls() != 1 || spare.Calls() != 0 {
		t.Fatalf("calls: primary %d, fallback %d; want 1 and 0", spent.Calls(), spare.Calls())
	}
}

// A Bedrock target behind a proxy that passes retry-after-ms on (LiteLLM, another gateway):
// the SDK's error keeps the answer's headers and the router reads the milliseconds. The
// server imitates Bedrock Runtime's 429 ThrottlingException plus that header.
func TestBedrockRetryAfterMsIsRead(t *testing.T) {
	throttling := rt.Bedrock(t, rt.Always(rt.Reply{Status: 429, ErrorCode: "ThrottlingException", RetryAfterMs: "1500"}))
	r, _ := router.New([]router.Policy{
		pol("fast", rt.BedrockProvider(throttling), "m1", func(p *router.Policy) { p.Retries, p.AllowedFails = 0, 5 }),
	}, router.Options{})
	re := throttleOf(t, chatWithin(r, "fast", 10*time.Second))
	if !re.Retryable || !re.Throttle || re.RetryAfter <= time.Second || re.RetryAfter > 1500*time.Millisecond {
		t.Fatalf("Bedrock 429 with retry-after-ms 1500: %+v, want a throttle after ~1.5s", re)
	}
}

// A policy's own tokens_per_minute is a rate limit too: when the bucket refills only after the
// step's deadline, the error is a throttle naming the refill. The server imitates an OpenAI
// chat completion reporting 100 tokens of usage.
func TestSpentTokenBudgetIsAThrottleUntilTheRefill(t *testing.T) {
	srv := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "ok", Usage: router.Usage{InputTokens: 90, OutputTokens: 10}}))
	r, _ := router.New([]router.Policy{
		pol("fast", rt.OpenAIProvider(srv, ""), "m1", func(p *router.Policy) { p.TokensPerMinute = 60 }),
	}, router.Options{})
	if err := chatWithin(r, "fast", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// 60 - 100 = 40 tokens of debt: one whole token is back after 41 s at one a second.
	re := throttleOf(t, chatWithin(r, "fast", time.Second))
	if !re.Retryable || !re.Throttle || re.RetryAfter <= 40*time.Second || re.RetryAfter > 41*time.Second+time.Millisecond {
		t.Fatalf("bucket spent until after the deadline: %+v, want a throttle after ~41s", re)
	}
	if srv.Calls() != 1 {
		t.Fatalf("%d calls, want 1 (no call on a spent budget)", srv.Calls())
	}
}
