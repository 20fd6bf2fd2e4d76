package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/compiler/terraform"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// objectChange is a plan's change of an aws_s3_object whose prior state is key and content.
func objectChange(name string, actions tfjson.Actions, key, content string) *tfjson.ResourceChange {
	return &tfjson.ResourceChange{Address: "aws_s3_object." + name, Type: "aws_s3_object", Name: name, Mode: tfjson.ManagedResourceMode,
		Change: &tfjson.Change{Actions: actions, Before: map[string]any{"bucket": "triage-claims", "key": key, "content": content,
			"content_type": "application/json", "server_side_encryption": "AES256", "bucket_key_enabled": false}}}
}

// TestConfigsToKeep: of the config objects a plan replaces, only those of canary and linear
// lambda classes are kept, with the prior state's key and bytes; an all-at-once class moves
// every invocation at once, and an update deletes nothing.
func TestConfigsToKeep(t *testing.T) {
	f := irtest.Load(t, rolloutSpec)
	replace := tfjson.Actions{tfjson.ActionCreate, tfjson.ActionDelete} // create_before_destroy
	s := Summarize(&tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		objectChange("classify_config", replace, "config/runtime/classify/aaa.json", `{"class":"classify"}`),
		objectChange("enrich_config", replace, "config/runtime/enrich/bbb.json", `{"class":"enrich"}`),
		objectChange("tag_config", replace, "config/runtime/tag/ccc.json", `{"class":"tag"}`),
		objectChange("other", replace, "config/runtime/other/ddd.json", `{}`),
	}}, nil)
	got := ConfigsToKeep(f, s)
	want := []ConfigObject{
		{Class: "classify", Bucket: "triage-claims", Key: "config/runtime/classify/aaa.json", ContentType: "application/json", Content: []byte(`{"class":"classify"}`)},
		{Class: "enrich", Bucket: "triage-claims", Key: "config/runtime/enrich/bbb.json", ContentType: "application/json", Content: []byte(`{"class":"enrich"}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("kept %+v, want classify's and enrich's", got)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.Class != w.Class || g.Bucket != w.Bucket || g.Key != w.Key || string(g.Content) != string(w.Content) ||
			g.ContentType != w.ContentType {
			t.Errorf("kept[%d] = %+v, want %+v", i, g, w)
		}
	}
	upd := Summarize(&tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		objectChange("classify_config", tfjson.Actions{tfjson.ActionUpdate}, "config/runtime/classify/aaa.json", `{}`)}}, nil)
	if got := ConfigsToKeep(f, upd); len(got) != 0 {
		t.Errorf("an update keeps %+v", got)
	}
}

// TestKeepConfigsOnKumo puts a config back on kumo and reads it as the old version would:
// same key, same bytes, tagged for the lifecycle rule; then EmptyBucket (destroy
// --allow-data-loss) still removes it.
func TestKeepConfigsOnKumo(t *testing.T) {
	t.Parallel() // an emulator test: see environWith
	ctx := context.Background()
	endpoint, err := verifytest.Kumo(ctx)
	verifytest.SkipIfMissing(t, err)
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	c := awsconfig.S3(cfg)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	bucket := "fleetc-keep-" + hex.EncodeToString(b)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	o := ConfigObject{Class: "classify", Bucket: bucket, Key: "config/runtime/classify/aaa.json", ContentType: "application/json",
		Content: []byte(`{"class":"classify"}`)}
	if err := KeepConfigs(ctx, c, []ConfigObject{o}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(o.Key)})
	if err != nil {
		t.Fatalf("the old version's config is gone: %v", err)
	}
	body, _ := io.ReadAll(got.Body)
	_ = got.Body.Close()
	if string(body) != string(o.Content) || aws.ToString(got.ContentType) != o.ContentType {
		t.Errorf("kept object = %q (%s), want %q (%s)", body, aws.ToString(got.ContentType), o.Content, o.ContentType)
	}
	tags, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String(o.Key)})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Key) != terraform.RetainedConfigTag || aws.ToString(tags.TagSet[0].Value) != terraform.RetainedConfigTagValue {
		t.Errorf("kept object's tags = %+v, want %s=%s (else the lifecycle never expires it)", tags.TagSet, terraform.RetainedConfigTag, terraform.RetainedConfigTagValue)
	}
	if n, err := EmptyBucket(ctx, c, bucket); err != nil || n != 1 {
		t.Errorf("EmptyBucket: %d, %v; want the kept object deleted", n, err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
}
