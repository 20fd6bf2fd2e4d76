package fromconfig

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/apikey"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
	"github.com/fleetc/fleetc/runtime/router/openai"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

func TestPoliciesFromRuntimeConfig(t *testing.T) {
	srv := rt.OpenAI(t, "sk-from-env", rt.Always(rt.Reply{Text: "hi from litellm"}))
	m := config.Models{Policy: "fast", Policies: map[string]config.ModelPolicy{
		"fast": {Targets: []string{"bedrock/us.anthropic.claude-haiku-4-5", "bedrock/anthropic.claude-3-haiku"}, Fallbacks: []string{"proxy"},
			ContextWindowFallbacks: []string{"proxy"}, Retries: 2, TimeoutSeconds: 120, AllowedFails: 2, CooldownSeconds: 60,
			MaxInFlight: 400, TokensPerMinute: 2000000, Processes: 80},
		"proxy": {Targets: []string{"openai/gpt-4o-mini"}, BaseURL: srv.URL + "/v1", APIKeyEnv: "LITELLM_KEY", Fallbacks: []string{},
			Retries: 1, TimeoutSeconds: 30, MaxInFlight: 3},
	}}
	env := map[string]string{"LITELLM_KEY": "sk-from-env"}
	ps, err := Policies(m, Options{AWS: &aws.Config{Region: "us-east-1"}, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	fast, proxy := ps[0], ps[1]
	if fast.Name != "fast" || len(fast.Deployments) != 2 || fast.Deployments[1].Model != "anthropic.claude-3-haiku" ||
		fast.Deployments[0].Provider.System() != "aws.bedrock" || fast.Timeout != 120*time.Second || fast.Cooldown != time.Minute || fast.FailWindow != time.Minute {
		t.Fatalf("fast = %+v", fast)
	}
	// Fleet-wide numbers divided across the 80 processes that share them.
	if fast.MaxInFlight != 5 || fast.TokensPerMinute != 25000 {
		t.Fatalf("per-process share: max_in_flight %d (want 400/80 = 5), tokens_per_minute %d (want 25000)", fast.MaxInFlight, fast.TokensPerMinute)
	}
	if proxy.MaxInFlight != 3 || proxy.Deployments[0].Provider.System() != "openai" || fast.ContextWindowFallbacks[0] != "proxy" {
		t.Fatalf("proxy = %+v", proxy)
	}
	r, err := router.New(ps, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Chat(context.Background(), "proxy", &router.Request{Messages: []router.Message{{Role: "user", Content: []router.Block{{Text: "x"}}}}})
	if err != nil || resp.Text() != "hi from litellm" || srv.Models()[0] != "gpt-4o-mini" {
		t.Fatalf("%v %v (the fake checks the bearer key from LITELLM_KEY)", resp, err)
	}
}

func TestPoliciesRejects(t *testing.T) {
	for name, c := range map[string]struct {
		mp   config.ModelPolicy
		want string
	}{
		"unknown provider": {config.ModelPolicy{Targets: []string{"anthropic/claude"}}, "unknown provider"},
		"no base_url":      {config.ModelPolicy{Targets: []string{"openai/gpt"}}, "needs base_url"},
		"empty key env":    {config.ModelPolicy{Targets: []string{"openai/gpt"}, BaseURL: "http://x/v1", APIKeyEnv: "NOPE"}, "NOPE"},
		"no aws":           {config.ModelPolicy{Targets: []string{"bedrock/m"}}, "AWS"},
	} {
		_, err := Policies(config.Models{Policy: "p", Policies: map[string]config.ModelPolicy{"p": c.mp}}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// One pooled client per endpoint, sized to what may be in flight to it: 8 callers at once
// for 200 calls reuse the pool's connections (http.DefaultClient keeps 2 idle per host,
// so it opened a new connection for most of them). The bound is the pool's size, not the
// 8 callers: a request that finds no idle connection dials, and when another connection
// frees up first the transport uses that one and parks the new dial in the pool (CI saw 9).
func TestOneSizedPoolPerEndpoint(t *testing.T) {
	srv := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "ok", Delay: time.Millisecond}))
	m := config.Models{Policy: "a", Policies: map[string]config.ModelPolicy{
		"a": {Targets: []string{"openai/m1"}, BaseURL: srv.URL + "/v1", MaxInFlight: 8, TimeoutSeconds: 5},
		"b": {Targets: []string{"openai/m2"}, BaseURL: srv.URL + "/v1", MaxInFlight: 6, TimeoutSeconds: 5},
		"c": {Targets: []string{"bedrock/m3"}, MaxInFlight: 40, Processes: 4},
	}}
	ps, err := Policies(m, Options{AWS: &aws.Config{Region: "us-east-1"}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := ps[0].Deployments[0].Provider.(*openai.Client), ps[1].Deployments[0].Provider.(*openai.Client)
	if a.HTTP != b.HTTP || a.HTTP.Transport.(*http.Transport).MaxIdleConnsPerHost != 14 {
		t.Fatalf("policies on one base_url share one client sized 8+6: %p %p", a.HTTP, b.HTTP)
	}
	br := ps[2].Deployments[0].Provider.(*bedrock.Provider).API.(*bedrockruntime.Client)
	if tr := br.Options().HTTPClient.(*http.Client).Transport.(*http.Transport); tr.MaxIdleConnsPerHost != 10 || !tr.ForceAttemptHTTP2 {
		t.Fatalf("bedrock pool: %d idle per host (want 40/4 = 10), HTTP/2 %v", tr.MaxIdleConnsPerHost, tr.ForceAttemptHTTP2)
	}
	r, err := router.New(ps, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := r.Chat(context.Background(), "a", &router.Request{Messages: []router.Message{{Role: "user", Content: []router.Block{{Text: "x"}}}}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if pool := a.HTTP.Transport.(*http.Transport).MaxIdleConnsPerHost; srv.Calls() != 200 || srv.Conns() > pool {
		t.Fatalf("%d calls over %d connections, want at most the pool's %d", srv.Calls(), srv.Conns(), pool)
	}
}

// fakeSecrets answers GetSecretValue as Secrets Manager does, recording the SecretId and
// the region of the client that asked.
type fakeSecrets struct {
	region string
	asked  *[]string
	value  string
}

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	*f.asked = append(*f.asked, f.region+" "+aws.ToString(in.SecretId))
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(f.value)}, nil
}

// api_key_env wins when the variable is set (fleetc dev, a local run); otherwise the key
// is read from api_key, in the region its ARN names, once per secret however many policies
// name it.
func TestKeySources(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:fleet/openai-AbCdEf"
	var asked []string
	secrets := func(region string) apikey.SecretsAPI {
		return fakeSecrets{region: region, asked: &asked, value: `{"api_key":"sk-from-secret"}`}
	}
	key := &config.APIKey{Secret: arn, JSONKey: "api_key"}
	m := config.Models{Policy: "a", Policies: map[string]config.ModelPolicy{
		"a": {Targets: []string{"openai/m1"}, BaseURL: "http://x/v1", APIKeyEnv: "DEV_KEY", APIKey: key},
		"b": {Targets: []string{"openai/m2"}, BaseURL: "http://x/v1", APIKey: key},
	}}
	for _, c := range []struct {
		env, wantA string
		reads      int
	}{{"sk-from-shell", "sk-from-shell", 1}, {"", "sk-from-secret", 1}} {
		asked = nil
		ps, err := Policies(m, Options{Getenv: func(string) string { return c.env }, Secrets: secrets})
		if err != nil {
			t.Fatal(err)
		}
		a, b := ps[0].Deployments[0].Provider.(*openai.Client), ps[1].Deployments[0].Provider.(*openai.Client)
		if a.Keys.Key() != c.wantA || b.Keys.Key() != "sk-from-secret" {
			t.Errorf("env %q: keys %q, %q, want %q, sk-from-secret", c.env, a.Keys.Key(), b.Keys.Key(), c.wantA)
		}
		if len(asked) != c.reads || asked[0] != "eu-west-1 "+arn {
			t.Errorf("env %q: reads %q, want %d in eu-west-1", c.env, asked, c.reads)
		}
	}
}
