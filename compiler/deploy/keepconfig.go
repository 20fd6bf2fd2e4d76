package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/terraform"
)

// ConfigObject is a config object as the state before a plan holds it: enough to write it
// again, byte for byte. Its encryption is the bucket's default (the one configObject sets),
// so a put without encryption headers encrypts it as before.
type ConfigObject struct {
	Class, Bucket, Key, ContentType string
	Content                         []byte
}

// configObjectOf reads an aws_s3_object's prior state (nil when it has none).
func configObjectOf(state any) *ConfigObject {
	m, _ := state.(map[string]any)
	o := &ConfigObject{Bucket: stateString(m, "bucket"), Key: stateString(m, "key"), ContentType: stateString(m, "content_type"),
		Content: []byte(stateString(m, "content"))}
	if o.Bucket == "" || o.Key == "" {
		return nil
	}
	return o
}

// ConfigsToKeep are the config objects the applied plan s deletes while a version reading
// them can still take traffic: those of every class with a canary or linear shift
// (terraform.KeepsOldConfig) whose config object the plan replaces. Terraform deletes the
// old object once the function names the new one, but the old version keeps serving until
// CodeDeploy's shift ends, and every cold start of it reads its config.
func ConfigsToKeep(f *ir.Fleet, s *Summary) []ConfigObject {
	replaced := map[string]*ConfigObject{}
	for _, c := range s.Changes {
		if c.object != nil { // set on replacements only
			replaced[c.Address] = c.object
		}
	}
	var out []ConfigObject
	for _, a := range f.RolloutLambdas() {
		if o := replaced[terraform.ConfigObjectAddress(a)]; o != nil && terraform.KeepsOldConfig(a) {
			k := *o
			k.Class = a.Name
			out = append(out, k)
		}
	}
	return out
}

// ObjectPutter is the one S3 call keeping a config makes (*s3.Client).
type ObjectPutter interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// retainedTagging is the tag set of a kept config object, which the claim-check bucket's
// lifecycle expires after the longest shift (terraform.RetainedConfigDays).
var retainedTagging = url.Values{terraform.RetainedConfigTag: {terraform.RetainedConfigTagValue}}.Encode()

// KeepConfigs writes each object back under its key after the apply deleted it, tagged for
// expiry: the old version reads it (same key, same hash, so its role's read and the worker's
// hash check hold) until the shift ends. It stops at the first failure.
func KeepConfigs(ctx context.Context, c ObjectPutter, objs []ConfigObject) error {
	for _, o := range objs {
		in := &s3.PutObjectInput{Bucket: aws.String(o.Bucket), Key: aws.String(o.Key), Body: bytes.NewReader(o.Content),
			ContentType: aws.String(o.ContentType), Tagging: aws.String(retainedTagging)}
		if _, err := c.PutObject(ctx, in); err != nil {
			return fmt.Errorf("deploy: keeping class %s's previous config s3://%s/%s for its shift: %w", o.Class, o.Bucket, o.Key, err)
		}
	}
	return nil
}
