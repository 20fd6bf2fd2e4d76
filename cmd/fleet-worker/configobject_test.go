package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// fleet-worker started as the generated Lambda function starts it (no flags, FLEET_CONFIG_S3
// naming the config object Terraform wrote, on kumo's S3): it loads the config and gets as
// far as the mode (FLEET_MODE=batch stops it there, before any queue is touched); the same
// object with a variable naming another hash, or the object changed after the deploy, stops it
// with exit code 2 before that.
func TestConfigFromS3Object(t *testing.T) {
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	t.Setenv(awsconfig.EnvEndpoint, endpoint)
	raw, err := os.ReadFile("../../runtime/config/testdata/researcher.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const key = "config/runtime/researcher.json"
	put := kumoObject(t, endpoint, key)
	put(raw)
	sum := sha256.Sum256(raw)
	ref := config.ObjectRef{Bucket: put(nil), Key: key, Owner: "000000000000", SHA256: hex.EncodeToString(sum[:])}
	other := ref
	other.SHA256 = strings.Repeat("0", 64)

	run := func(v string) (int, string) {
		env := map[string]string{config.EnvConfigS3: v, config.EnvMode: "batch", "AWS_REGION": "us-east-1"}
		var errb bytes.Buffer
		code := Main(ctx, nil, func(k string) string { return env[k] }, &bytes.Buffer{}, &errb)
		return code, errb.String()
	}
	if code, stderr := run(ref.String()); code != exitUsage || !strings.Contains(stderr, `--mode "batch"`) {
		t.Errorf("the deployed object: exit %d, stderr %q; want the config loaded and the mode refused", code, stderr)
	}
	if code, stderr := run(other.String()); code != exitUsage || !strings.Contains(stderr, "refusing") {
		t.Errorf("a variable naming another hash: exit %d, stderr %q; want a refusal", code, stderr)
	}
	put(append(raw, ' '))
	if code, stderr := run(ref.String()); code != exitUsage || !strings.Contains(stderr, "refusing") {
		t.Errorf("the object changed after the deploy: exit %d, stderr %q; want a refusal", code, stderr)
	}
}

// kumoObject creates a bucket on kumo and returns a function that writes body (when not nil)
// as the object key and returns the bucket's name.
func kumoObject(t *testing.T, endpoint, key string) func(body []byte) string {
	t.Helper()
	ctx := context.Background()
	acfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	api := awsconfig.S3(acfg)
	bucket := fmt.Sprintf("fleet-worker-config-%d", time.Now().UnixNano()%1e9)
	if _, err := api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		_, _ = api.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
	return func(body []byte) string {
		t.Helper()
		if body != nil {
			if _, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
		}
		return bucket
	}
}

// The async tools function starts the same way: FLEET_TOOLS_S3 names tools/tools.json's
// object. With the deployed object it gets past the config to serving (an unusable --listen
// stops it there, exit 1); naming another hash stops it at the config (exit 2).
func TestToolsConfigFromS3Object(t *testing.T) {
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	t.Setenv(awsconfig.EnvEndpoint, endpoint)
	res, err := compiler.Compile(compiler.Input{Path: "../../examples/async-tools/fleet.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Diagnostics.HasErrors() {
		t.Fatal(res.Diagnostics)
	}
	set := res.Files
	raw, ok := set.Get(rc.ToolsFile)
	if !ok {
		t.Fatalf("no %s in the build", rc.ToolsFile)
	}
	const key = "config/tools/tools.json"
	put := kumoObject(t, endpoint, key)
	put(raw)
	sum := sha256.Sum256(raw)
	ref := config.ObjectRef{Bucket: put(nil), Key: key, Owner: "000000000000", SHA256: hex.EncodeToString(sum[:])}
	other := ref
	other.SHA256 = strings.Repeat("0", 64)
	run := func(v string) (int, string) {
		env := map[string]string{config.EnvToolsS3: v, config.EnvMode: ModeTools, "AWS_REGION": "us-east-1"}
		var errb bytes.Buffer
		code := Main(context.Background(), []string{"--listen", "127.0.0.1:-1"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &errb)
		return code, errb.String()
	}
	if code, stderr := run(ref.String()); code != exitRuntime || !strings.Contains(stderr, "listen tcp") {
		t.Errorf("the deployed object: exit %d, stderr %q; want the config loaded and the listener refused", code, stderr)
	}
	if code, stderr := run(other.String()); code != exitUsage || !strings.Contains(stderr, "refusing") {
		t.Errorf("a variable naming another hash: exit %d, stderr %q; want a refusal", code, stderr)
	}
}
