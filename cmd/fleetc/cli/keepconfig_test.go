package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// TestKeepConfigsAfterApply: given an applied plan that replaced the canary class classify's
// config object, apply's keepConfigs writes the old object back on kumo and says so.
func TestKeepConfigsAfterApply(t *testing.T) {
	ctx := context.Background()
	endpoint, err := verifytest.Kumo(ctx)
	verifytest.SkipIfMissing(t, err)
	f := irtest.Load(t, "../../../compiler/terraform/testdata/rollout/fleet.yaml")
	c, err := awsconfig.BucketEmptier(ctx, f.Region, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	bucket := "fleetc-keep-" + hex.EncodeToString(b)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = deploy.EmptyBucket(ctx, c, bucket) }()
	key, content := "config/runtime/classify/aaa.json", `{"class":"classify"}`
	s := deploy.Summarize(&tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{{
		Address: "aws_s3_object.classify_config", Type: "aws_s3_object", Name: "classify_config", Mode: tfjson.ManagedResourceMode,
		Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionCreate, tfjson.ActionDelete},
			Before: map[string]any{"bucket": bucket, "key": key, "content": content, "content_type": "application/json"}}}}}, nil)
	var out bytes.Buffer
	if err := keepConfigs(ctx, f, s, endpoint, &out); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("classify's previous config is gone after apply: %v", err)
	}
	body, _ := io.ReadAll(got.Body)
	_ = got.Body.Close()
	if string(body) != content {
		t.Errorf("kept %q, want %q", body, content)
	}
	if want := "class classify: kept its previous config s3://" + bucket + "/" + key; !strings.Contains(out.String(), want) {
		t.Errorf("apply printed %q, want %q", out.String(), want)
	}
}
