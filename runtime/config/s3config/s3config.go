// Package s3config reads a config object (config.ObjectRef) from S3 at a worker's start and
// refuses content whose SHA-256 is not the one its function version was deployed with.
package s3config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
)

// Getter is the S3 call Fetch makes (an *s3.Client).
type Getter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// maxObjectBytes bounds what Fetch reads: far above any config fleetc writes, it only
// keeps a wrong reference from filling the worker's memory.
const maxObjectBytes = 64 << 20

// Fetch reads the object r names from its owner's bucket and returns its content only
// when its SHA-256 is the one r carries.
func Fetch(ctx context.Context, api Getter, r config.ObjectRef) ([]byte, error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(r.Key), ExpectedBucketOwner: aws.String(r.Owner)})
	if err != nil {
		return nil, fmt.Errorf("read config object s3://%s/%s: %w", r.Bucket, r.Key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read config object s3://%s/%s: %w", r.Bucket, r.Key, err)
	}
	if len(body) > maxObjectBytes {
		return nil, fmt.Errorf("config object s3://%s/%s is over %d bytes", r.Bucket, r.Key, maxObjectBytes)
	}
	sum := sha256.Sum256(body)
	if got := hex.EncodeToString(sum[:]); got != r.SHA256 {
		return nil, fmt.Errorf("config object s3://%s/%s has sha256 %s, but this function version was deployed with %s: "+
			"refusing a config it was not deployed with (the object changed after the deploy; apply the Terraform again)", r.Bucket, r.Key, got, r.SHA256)
	}
	return body, nil
}

// NewGetter is the S3 client config objects are read with, on the worker's AWS
// configuration (FLEET_AWS_ENDPOINT for an emulator, AWS_REGION, the role's credentials).
func NewGetter(ctx context.Context, getenv func(string) string) (Getter, error) {
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: getenv(config.EnvRegion), MaxAttempts: 3})
	if err != nil {
		return nil, err
	}
	return awsconfig.S3(cfg), nil
}

// Load reads and validates the runtime config the variable name's reference v names.
func Load(ctx context.Context, api Getter, name, v string) (*config.Config, error) {
	r, err := config.ParseObjectRef(name, v)
	if err != nil {
		return nil, err
	}
	raw, err := Fetch(ctx, api, r)
	if err != nil {
		return nil, err
	}
	return config.Parse("s3://"+r.Bucket+"/"+r.Key, raw)
}
