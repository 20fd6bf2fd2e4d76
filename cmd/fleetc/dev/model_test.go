package dev

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/fromconfig"
	"github.com/fleetc/fleetc/runtime/router/gateway"
)

// The stand-in handler's model call goes through fleet-worker's real model gateway and
// router (built from a runtime config's models section, as the worker builds them) to dev's
// Bedrock stand-in; during a 429 wave the stand-in answers ThrottlingException and the
// gateway, its retry spent, answers the handler with a failure; after the wave it answers.
func TestModelStandInThroughGateway(t *testing.T) {
	m, err := startModelStandIn()
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	models := config.Models{Policy: "p", Policies: map[string]config.ModelPolicy{
		"p": {Targets: []string{"bedrock/test-model"}, Retries: 1, TimeoutSeconds: 10},
	}}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	policies, err := fromconfig.Policies(models, fromconfig.Options{AWS: &awsCfg, BedrockEndpoint: m.endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(policies, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(r, "p", "127.0.0.1:0", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	ctx := context.Background()

	text, err := askModel(ctx, gw.URL(), gw.Token(), `{"detail":{}}`)
	if err != nil || !strings.Contains(text, "stand-in answer from test-model") {
		t.Fatalf("askModel = %q, %v", text, err)
	}
	if v := m.view(time.Now()); v.Calls != 1 || v.Throttled != 0 || v.WaveUntil != nil {
		t.Errorf("before the wave: %+v", v)
	}

	// A wave longer than the policy's retries: the router waits out each retry-after, its
	// retry is throttled too, and the gateway answers the handler with the throttle.
	m.wave(time.Minute)
	_, err = askModel(ctx, gw.URL(), gw.Token(), `{}`)
	var re *retry.Error
	if !errors.As(err, &re) || !re.Throttle || re.RetryAfter <= 0 || !strings.Contains(err.Error(), "the model gateway answered") {
		t.Fatalf("askModel during the wave: %#v, want the gateway's throttle", err)
	}
	v := m.view(time.Now())
	if v.Throttled != 2 || v.WaveUntil == nil || v.Waves != 1 {
		t.Errorf("during the wave (one call, one retry, both throttled): %+v", v)
	}

	// A wave shorter than the timeout, on a fresh router: it waits out the retry-after and
	// its retry answers.
	r2, err := router.New(policies, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw2, err := gateway.Start(r2, "p", "127.0.0.1:0", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gw2.Close(context.Background())
	m.wave(time.Second)
	if _, err := askModel(ctx, gw2.URL(), gw2.Token(), `{}`); err != nil {
		t.Errorf("a 1 s wave: %v", err)
	}
	if v := m.view(time.Now()); v.Throttled != 3 || v.Calls != 5 {
		t.Errorf("after a 1 s wave (one throttled call, one answered): %+v", v)
	}
}

// During a wave the stand-in names when to come back in both retry-after headers, so the
// worker reads a throttle (a delay), not a spend limit (a 429 without retry-after): a few
// seconds (WaveRetryAfter), or what is left of the wave when less.
func TestModelWaveNamesRetryAfter(t *testing.T) {
	m, err := startModelStandIn()
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	for _, tc := range []struct {
		wave      time.Duration
		ra        string
		minMs, ms int
	}{{time.Minute, "3", 3000, 3000}, {1500 * time.Millisecond, "2", 1000, 1500}} {
		m.wave(tc.wave)
		resp, err := http.Post(m.endpoint()+"/model/m/converse", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ms, _ := strconv.Atoi(resp.Header.Get("Retry-After-Ms"))
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != tc.ra || ms < tc.minMs || ms > tc.ms {
			t.Errorf("%s wave: %d, Retry-After %q, retry-after-ms %q; want 429, %s, %d..%d", tc.wave,
				resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"), tc.ra, tc.minMs, tc.ms)
		}
		if e := retry.FromResponse(resp.StatusCode, resp.Header, ""); !e.Throttle || e.RetryAfter != time.Duration(ms)*time.Millisecond {
			t.Errorf("the worker reads %+v, want a throttle of %d ms", e, ms)
		}
	}
}
