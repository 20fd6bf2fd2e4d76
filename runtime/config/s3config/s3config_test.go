package s3config

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// On kumo's S3: the worker reads its config from the object the generated Terraform writes,
// through the environment variable the function carries, and refuses an object whose content
// is not the one its function version was deployed with (edited after the deploy, or the
// variable naming another hash).
func TestLoadFromKumo(t *testing.T) {
	cfg := kumotest.Require(t)
	api := awsconfig.S3(cfg)
	bucket := kumotest.Bucket(t, cfg, "config")
	raw, err := os.ReadFile("../testdata/researcher.json")
	if err != nil {
		t.Fatal(err)
	}
	put := func(body []byte) {
		t.Helper()
		if _, err := api.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("config/runtime/researcher.json"),
			Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put(raw)
	ref := config.ObjectRef{Bucket: bucket, Key: "config/runtime/researcher.json", Owner: kumotest.Account, SHA256: sha256Hex(raw)}
	env := map[string]string{config.EnvConfigS3: ref.String(), config.EnvRegion: kumotest.Region}

	// The worker's own client (NewObjectGetter reads FLEET_AWS_ENDPOINT, as under RIE).
	t.Setenv(awsconfig.EnvEndpoint, kumotest.Endpoint)
	getter, err := NewGetter(context.Background(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(context.Background(), getter, config.EnvConfigS3, env[config.EnvConfigS3])
	if err != nil || c.Class != "researcher" {
		t.Fatalf("LoadObject = %+v, %v; want the researcher config", c, err)
	}

	// Another hash in the variable: refused, naming both hashes.
	other := ref
	other.SHA256 = sha256Hex([]byte("another config"))
	if _, err := Load(context.Background(), getter, config.EnvConfigS3, other.String()); err == nil ||
		!strings.Contains(err.Error(), "refusing") || !strings.Contains(err.Error(), ref.SHA256) || !strings.Contains(err.Error(), other.SHA256) {
		t.Errorf("variable naming another hash: err = %v, want a refusal naming both hashes", err)
	}
	// The object edited after the deploy (still a valid config): refused too.
	put(append(raw, '\n'))
	if _, err := Load(context.Background(), getter, config.EnvConfigS3, ref.String()); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("object changed after the deploy: err = %v, want a refusal", err)
	}
}

// The read names the owning account (ExpectedBucketOwner), so S3 refuses a bucket of the same
// name in another account. kumo does not check the header, so this test serves S3's
// GetObject wire response from an httptest server that asserts the exact request it gets:
// GET /<bucket>/<key> (path style, as for any endpoint override) with
// x-amz-expected-bucket-owner set to the reference's account.
func TestFetchNamesBucketOwner(t *testing.T) {
	body := []byte(`{"format_version":1}`)
	ref := config.ObjectRef{Bucket: "cfg-bucket", Key: "config/runtime/a.json", Owner: "123456789012", SHA256: sha256Hex(body)}
	srv := s3Stub(t, func(method, path, owner string) {
		if method != "GET" || path != "/cfg-bucket/config/runtime/a.json" || owner != ref.Owner {
			t.Errorf("request %s %s owner %q, want GET /cfg-bucket/config/runtime/a.json owner %s", method, path, owner, ref.Owner)
		}
	}, body)
	acfg, err := awsconfig.Load(context.Background(), awsconfig.Options{Region: "us-east-1", Endpoint: srv})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Fetch(context.Background(), awsconfig.S3(acfg), ref)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("FetchObject = %q, %v", got, err)
	}
}
