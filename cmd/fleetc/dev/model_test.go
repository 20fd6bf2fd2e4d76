package dev

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/fleetc/fleetc/runtime/config"
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

	m.wave(time.Minute)
	_, err = askModel(ctx, gw.URL(), gw.Token(), `{}`)
	if err == nil || !strings.Contains(err.Error(), "the model gateway answered") {
		t.Fatalf("askModel during the wave: %v, want the gateway's failure", err)
	}
	v := m.view(time.Now())
	if v.Throttled < 2 || v.WaveUntil == nil || v.Waves != 1 {
		t.Errorf("during the wave (one call, one retry, both throttled): %+v", v)
	}

	m.wave(0) // the wave ends
	if _, err := askModel(ctx, gw.URL(), gw.Token(), `{}`); err != nil {
		t.Errorf("after the wave: %v", err)
	}
}
