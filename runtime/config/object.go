package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// A Lambda function's variables may total 4 KB, so a generated function (and an AgentCore
// runtime) does not carry its config: Terraform writes it as an S3 object and sets one
// variable naming that object and the SHA-256 of its content. A config change changes the
// variable, so it deploys a new function version; the worker fetches the object at start and
// refuses one whose hash differs, so it never runs a config its function version was not
// deployed with.
const (
	// EnvConfigS3 names the runtime config's object (ObjectRef), when --config is absent.
	EnvConfigS3 = "FLEET_CONFIG_S3"
	// EnvToolsS3 names the async tools config's object, when --tools-config is absent.
	EnvToolsS3 = "FLEET_TOOLS_S3"
)

// The query parameters of an object reference: s3://<bucket>/<key>?<owner>=<account>&<hash>=<hex>.
const (
	ObjectOwnerParam  = "expected-bucket-owner"
	ObjectSHA256Param = "sha256"
)

// ObjectRef is a config object: where it is, the account that must own its bucket (S3
// refuses the read otherwise, so a bucket re-created by someone else after deletion cannot
// feed the worker), and the SHA-256 its content must have.
type ObjectRef struct {
	Bucket, Key, Owner, SHA256 string
}

var (
	accountRE = regexp.MustCompile(`^[0-9]{12}$`)
	sha256RE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// String is the reference as the environment carries it.
func (r ObjectRef) String() string {
	return "s3://" + r.Bucket + "/" + r.Key + "?" + ObjectOwnerParam + "=" + r.Owner + "&" + ObjectSHA256Param + "=" + r.SHA256
}

// ParseObjectRef reads a reference from the variable name (named in errors).
func ParseObjectRef(name, v string) (ObjectRef, error) {
	bad := func(why string) (ObjectRef, error) {
		return ObjectRef{}, fmt.Errorf("%s=%q: %s (want s3://<bucket>/<key>?%s=<account id>&%s=<hex>)", name, v, why, ObjectOwnerParam, ObjectSHA256Param)
	}
	u, err := url.Parse(v)
	if err != nil {
		return bad(err.Error())
	}
	q := u.Query()
	r := ObjectRef{Bucket: u.Host, Key: strings.TrimPrefix(u.Path, "/"), Owner: q.Get(ObjectOwnerParam), SHA256: q.Get(ObjectSHA256Param)}
	switch {
	case u.Scheme != "s3" || r.Bucket == "" || r.Key == "":
		return bad("not an s3://bucket/key URL")
	case !accountRE.MatchString(r.Owner):
		return bad(ObjectOwnerParam + " is not a 12-digit account id")
	case !sha256RE.MatchString(r.SHA256):
		return bad(ObjectSHA256Param + " is not 64 lowercase hex digits")
	}
	return r, nil
}

// ObjectGetter is the S3 call FetchObject makes (an *s3.Client).
type ObjectGetter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// maxObjectBytes bounds what FetchObject reads: far above any config fleetc writes, it only
// keeps a wrong reference from filling the worker's memory.
const maxObjectBytes = 64 << 20

// FetchObject reads the object r names from its owner's bucket and returns its content only
// when its SHA-256 is the one r carries.
func FetchObject(ctx context.Context, api ObjectGetter, r ObjectRef) ([]byte, error) {
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

// NewObjectGetter is the S3 client config objects are read with, on the worker's AWS
// configuration (FLEET_AWS_ENDPOINT for an emulator, AWS_REGION, the role's credentials).
func NewObjectGetter(ctx context.Context, getenv func(string) string) (ObjectGetter, error) {
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: getenv(EnvRegion), MaxAttempts: 3})
	if err != nil {
		return nil, err
	}
	return awsconfig.S3(cfg), nil
}

// LoadObject reads and validates the runtime config the variable name's reference v names.
func LoadObject(ctx context.Context, api ObjectGetter, name, v string) (*Config, error) {
	r, err := ParseObjectRef(name, v)
	if err != nil {
		return nil, err
	}
	raw, err := FetchObject(ctx, api, r)
	if err != nil {
		return nil, err
	}
	return Parse("s3://"+r.Bucket+"/"+r.Key, raw)
}
