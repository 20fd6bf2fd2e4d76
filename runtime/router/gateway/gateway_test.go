package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// fleet builds the usual two-group setup: a hard-down Bedrock primary ("fast") and an
// OpenAI-compatible fallback ("overflow"), both fake servers speaking their wire format.
func fleet(t *testing.T, spare rt.Script) (*router.Router, *rt.Server, *rt.Server) {
	t.Helper()
	down := rt.Bedrock(t, rt.Always(rt.Reply{Status: 503, ErrorCode: "ServiceUnavailableException"}))
	fb := rt.OpenAI(t, "", spare)
	pol := func(name string, p router.Provider, model string, fallbacks ...string) router.Policy {
		return router.Policy{Name: name, Deployments: []router.Deployment{{Name: name, Model: model, Provider: p}},
			Fallbacks: fallbacks, Retries: 1, Timeout: 2 * time.Second, AllowedFails: 2, Cooldown: time.Minute, MaxInFlight: 4,
			BackoffBase: time.Millisecond, BackoffCap: 5 * time.Millisecond}
	}
	r, err := router.New([]router.Policy{
		pol("fast", rt.BedrockProvider(down), "us.anthropic.claude-haiku-4-5", "overflow"),
		pol("overflow", rt.OpenAIProvider(fb, ""), "gpt-4o-mini"),
	}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r, down, fb
}

func needCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("FLEETC_REQUIRE_TOOLS") == "1" {
			t.Fatal("curl is required (apt-get install curl)")
		}
		t.Skip("curl not installed (apt-get install curl)")
	}
}

// The acceptance test: an exec handler written in shell calls the gateway with
// curl and gets the fallback's answer, while the Bedrock primary is hard down.
func TestShellExecHandlerGetsTheFallbacksAnswerThroughTheGateway(t *testing.T) {
	needCurl(t)
	r, down, fb := fleet(t, rt.Always(rt.Reply{Text: "answer from the fallback"}))
	gw, err := gateway.Start(r, "fast", "127.0.0.1:0", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	script := `set -eu
question=$(cat)
curl -sS --fail-with-body -X POST "$FLEET_MODEL_GATEWAY_URL/chat/completions" \
  -H 'Content-Type: application/json' -H "X-Fleet-Deadline: $FLEET_DEADLINE" \
  -H "Authorization: Bearer $FLEET_MODEL_GATEWAY_TOKEN" \
  -d "{\"model\":\"fast\",\"messages\":[{\"role\":\"user\",\"content\":$question}]}"`
	h, err := handler.NewExec([]string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	h.Env = gw.Env()
	out, err := h.Handle(context.Background(), handler.Request{Class: "researcher", Key: "k1", Attempt: 1,
		Deadline: time.Now().Add(10 * time.Second), Input: json.RawMessage(`"what is up?"`)})
	if err != nil {
		t.Fatal(err)
	}
	var cr struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &cr); err != nil || len(cr.Choices) != 1 {
		t.Fatalf("handler output %s: %v", out, err)
	}
	if cr.Choices[0].Message.Content != "answer from the fallback" || cr.Model != "gpt-4o-mini" || cr.Choices[0].FinishReason != "stop" {
		t.Fatalf("handler output %s", out)
	}
	if down.Calls() != 2 || fb.Calls() != 1 {
		t.Fatalf("calls: primary %d (want 1 + 1 retry), fallback %d", down.Calls(), fb.Calls())
	}
	if got := fb.Requests()[0].Messages[0].Content[0].Text; got != "what is up?" {
		t.Fatalf("the fallback got %q", got)
	}
}

func TestGatewaySpeaksConverseToTheAWSSDK(t *testing.T) {
	r, _, _ := fleet(t, rt.Always(rt.Reply{Text: "converse via fallback", Usage: router.Usage{InputTokens: 9, OutputTokens: 4}}))
	gw, err := gateway.Start(r, "fast", "127.0.0.1:0", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	client := gatewayClient(gw)
	out, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{
		ModelId:  aws.String("us.anthropic.claude-haiku-4-5"),
		Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	if txt := msg.Content[0].(*types.ContentBlockMemberText).Value; txt != "converse via fallback" || aws.ToInt32(out.Usage.InputTokens) != 9 || out.StopReason != types.StopReasonEndTurn {
		t.Fatalf("converse answer %q usage %+v stop %s", txt, out.Usage, out.StopReason)
	}
}

func TestGatewayKeepsSpendLimitFinal(t *testing.T) {
	spent := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, ErrorCode: "insufficient_quota"}))
	r, _ := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "p", Model: "m", Provider: rt.OpenAIProvider(spent, "")}},
		Retries: 2, Timeout: time.Second, AllowedFails: 2, Cooldown: time.Minute}}, router.Options{})
	gw, _ := gateway.Start(r, "p", "127.0.0.1:0", 5*time.Second)
	defer gw.Close(context.Background())
	resp, err := post(gw, "/v1/chat/completions", `{"model":"p","messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error struct{ Code string } }
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "" || resp.Header.Get("Retry-After-Ms") != "" || body.Error.Code != "insufficient_quota" || resp.Header.Get("X-Should-Retry") != "false" || spent.Calls() != 1 {
		t.Fatalf("status %d retry-after %q retry-after-ms %q code %q calls %d: a spend limit stays a final 429 without a retry-after",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"), body.Error.Code, spent.Calls())
	}
	// What the caller's own classification (the worker's) makes of it: dead-letter.
	if e := retry.FromStatus(resp.StatusCode, resp.Header.Get("Retry-After"), ""); e.Retryable || e.Code != "SpendLimit" {
		t.Fatalf("%+v", e)
	}
	var re *retry.Error
	_, err = r.Chat(context.Background(), "p", &router.Request{Messages: []router.Message{{Role: "user", Content: []router.Block{{Text: "x"}}}}})
	if !errors.As(err, &re) || re.Code != router.CodeSpendLimit {
		t.Fatal(err)
	}
}

func TestGatewayIsLoopbackOnly(t *testing.T) {
	r, _, _ := fleet(t, rt.Always(rt.Reply{Text: "x"}))
	if _, err := gateway.Start(r, "fast", "0.0.0.0:0", time.Second); err == nil {
		t.Fatal("the gateway must refuse a non-loopback address")
	}
}

// An http handler's sidecar finds the gateway in X-Fleet-Model-Gateway and gets the
// fallback's answer the same way.
func TestHTTPSidecarReachesTheGatewayFromItsHeader(t *testing.T) {
	r, _, fb := fleet(t, rt.Always(rt.Reply{Text: "sidecar answer"}))
	gw, err := gateway.Start(r, "fast", "127.0.0.1:0", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	sidecar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		base := req.Header.Get("X-Fleet-Model-Gateway")
		greq, _ := http.NewRequest(http.MethodPost, base+"/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		greq.Header.Set("Content-Type", "application/json")
		greq.Header.Set("Authorization", "Bearer "+req.Header.Get(handler.HeaderModelGatewayToken))
		resp, err := http.DefaultClient.Do(greq)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer sidecar.Close()
	h, _ := handler.NewHTTP(sidecar.URL, nil)
	h.ModelGateway, h.ModelGatewayToken = gw.URL()+"/v1", gw.Token()
	out, err := h.Handle(context.Background(), handler.Request{Class: "c", Key: "k", Attempt: 1, Input: json.RawMessage(`{}`)})
	if err != nil || !strings.Contains(string(out), "sidecar answer") || fb.Calls() != 1 {
		t.Fatalf("%s %v (fallback calls %d)", out, err, fb.Calls())
	}
}

// gatewayClient is the AWS SDK for Go's Bedrock Runtime client pointed at gw, signing
// with the token as its access key id (its bearer signer refuses plain HTTP).
func gatewayClient(gw *gateway.Gateway) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(gw.URL()),
		Credentials: credentials.NewStaticCredentialsProvider(gw.Token(), "unused", ""), Retryer: aws.NopRetryer{}})
}

// post sends body to the gateway with its token.
func post(gw *gateway.Gateway, path, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, gw.URL()+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gw.Token())
	return http.DefaultClient.Do(req)
}

// answer is one gateway error answer as a client sees it.
type answer struct {
	status                        int
	retryAfter, retryAfterMs      string
	shouldRetry, kind, code, amzn string
}

func (a answer) ms(t *testing.T) time.Duration {
	t.Helper()
	n, err := strconv.Atoi(a.retryAfterMs)
	if err != nil {
		t.Fatalf("retry-after-ms %q: %v", a.retryAfterMs, err)
	}
	return time.Duration(n) * time.Millisecond
}

func ask(t *testing.T, gw *gateway.Gateway, converse bool) answer {
	t.Helper()
	path, body := "/v1/chat/completions", `{"model":"p","messages":[{"role":"user","content":"x"}]}`
	if converse {
		path, body = "/model/p/converse", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`
	}
	resp, err := post(gw, path, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb struct{ Error struct{ Type, Code string } }
	json.NewDecoder(resp.Body).Decode(&eb)
	h := resp.Header
	return answer{resp.StatusCode, h.Get("Retry-After"), h.Get("Retry-After-Ms"), h.Get("X-Should-Retry"), eb.Error.Type, eb.Error.Code, h.Get("X-Amzn-ErrorType")}
}

// The gateway says when to come back, and only what it knows: a throttle (every deployment
// benched after a rate limit) is OpenAI's rate-limit 429 and Bedrock's ThrottlingException
// with Retry-After (whole seconds, rounded up) and retry-after-ms, both the router's real
// remaining wait; an outage is a 503 carrying them only while every deployment is benched.
// The upstreams imitate OpenAI's rate-limit 429 (code rate_limit_exceeded, retry-after-ms)
// and Bedrock Runtime's 503 ServiceUnavailableException (no retry-after).
func TestGatewayTellsWhenToRetry(t *testing.T) {
	serve := func(p router.Provider, allowedFails int, cooldown time.Duration) *gateway.Gateway {
		r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "p", Model: "m", Provider: p}},
			Timeout: 2 * time.Second, AllowedFails: allowedFails, Cooldown: cooldown}}, router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		gw, err := gateway.Start(r, "p", "127.0.0.1:0", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gw.Close(context.Background()) })
		return gw
	}
	// Retry-After is retry-after-ms in whole seconds, rounded up.
	consistent := func(a answer) bool {
		n, err := strconv.Atoi(a.retryAfterMs)
		return err == nil && a.retryAfter == strconv.Itoa((n+999)/1000)
	}

	limited := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, ErrorCode: "rate_limit_exceeded", RetryAfterMs: "2500"}))
	gw := serve(rt.OpenAIProvider(limited, ""), 0, time.Minute)
	a := ask(t, gw, false)
	if a.status != 429 || a.kind != "requests" || a.code != "rate_limit_exceeded" || a.shouldRetry != "true" ||
		!consistent(a) || a.ms(t) <= 1500*time.Millisecond || a.ms(t) > 2500*time.Millisecond {
		t.Errorf("throttle, OpenAI shape: %+v; want 429 requests/rate_limit_exceeded, retry-after-ms ~2500 and Retry-After that rounded up", a)
	}
	a = ask(t, gw, true) // still benched: no call, the rest of the wait
	if a.status != 429 || a.amzn != "ThrottlingException" || a.shouldRetry != "true" || !consistent(a) || a.ms(t) <= time.Second || a.ms(t) > 2500*time.Millisecond {
		t.Errorf("throttle, Converse shape: %+v; want 429 ThrottlingException with the remaining wait", a)
	}
	if limited.Calls() != 1 {
		t.Errorf("the upstream got %d calls during its retry-after, want 1", limited.Calls())
	}

	down := rt.Bedrock(t, rt.Always(rt.Reply{Status: 503, ErrorCode: "ServiceUnavailableException"}))
	gw = serve(rt.BedrockProvider(down), 0, 4*time.Second)
	for _, converse := range []bool{false, true} {
		a = ask(t, gw, converse)
		if a.status != 503 || a.shouldRetry != "true" || !consistent(a) || a.ms(t) <= 2*time.Second || a.ms(t) > 4*time.Second {
			t.Errorf("outage, every deployment benched (converse %v): %+v; want 503 with retry-after-ms ~4000 and Retry-After that rounded up", converse, a)
		}
	}
	if a.amzn != "ServiceUnavailableException" {
		t.Errorf("outage, Converse shape: X-Amzn-ErrorType %q", a.amzn)
	}

	gw = serve(rt.BedrockProvider(down), 100, time.Minute) // never benched: when is unknown
	a = ask(t, gw, false)
	if a.status != 503 || a.code != "model_unavailable" || a.shouldRetry != "true" || a.retryAfter != "" || a.retryAfterMs != "" {
		t.Errorf("outage, nothing benched: %+v; want 503 model_unavailable without Retry-After", a)
	}
}
