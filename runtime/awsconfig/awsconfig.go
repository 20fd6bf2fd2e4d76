// Package awsconfig builds the aws.Config every fleet-worker AWS client
// shares: region, an optional endpoint override (kumo in tests, VPC
// endpoints in production), SDK retries off by default, and a
// per-service request counter.
//
// Retries live at exactly one layer, the SQS queue (visibility timeout +
// redrive), so the SDK's own retryer is disabled unless a caller opts in
// with Options.MaxAttempts. Stacking SDK retries under queue redelivery
// multiplies attempts and hides throttling from the metrics.
//
// Typical use:
//
//	counter := awsconfig.NewRequestCounter()
//	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: rc.Region, Counter: counter})
//	sqsc := awsconfig.SQS(cfg)
//	ddb := awsconfig.DynamoDB(cfg)            // add awsconfig.WithoutCRC32 for kumo
//	s3c := awsconfig.S3(cfg)                  // path-style when an endpoint override is set
package awsconfig

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/internal/localhttp"
)

// Environment variables read by Load. EnvEndpoint wins over EnvEndpointSDK.
const (
	EnvEndpoint    = "FLEET_AWS_ENDPOINT"
	EnvEndpointSDK = "AWS_ENDPOINT_URL"
)

// Options configures Load. The zero value loads the default credential
// chain and region with SDK retries off.
type Options struct {
	// Region overrides the SDK's region resolution (AWS_REGION, shared
	// config). Load fails if no region results.
	Region string
	// Endpoint overrides every client's base endpoint. Empty means
	// EndpointFromEnv().
	Endpoint string
	// MaxAttempts is the SDK attempts per call; 0 or 1 disables SDK
	// retries (the queue is the retry layer).
	MaxAttempts int
	// Counter, when set, counts every HTTP attempt per AWS service.
	Counter *RequestCounter
	// Credentials overrides the default credential chain. When nil, the
	// endpoint is a loopback address (kumo) and the environment names no
	// credential source (see credentialEnv), static dummy credentials are
	// used so the SDK does not stall probing IMDS. Any named source (EKS
	// Pod Identity, web identity, a profile, keys) is left to the chain.
	Credentials aws.CredentialsProvider
	// HTTPTimeout bounds one HTTP attempt (0 = no client timeout; SQS
	// long polls need at least wait_time_seconds + a margin).
	HTTPTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers on one
	// attempt; 0 = DefaultResponseHeaderTimeout. It must exceed the SQS
	// long-poll wait (≤ 20 s).
	ResponseHeaderTimeout time.Duration
}

// DefaultResponseHeaderTimeout covers a 20 s SQS long poll plus a margin.
const DefaultResponseHeaderTimeout = 30 * time.Second

// EndpointFromEnv returns FLEET_AWS_ENDPOINT, else AWS_ENDPOINT_URL, else "".
func EndpointFromEnv() string {
	if v := os.Getenv(EnvEndpoint); v != "" {
		return v
	}
	return os.Getenv(EnvEndpointSDK)
}

// Load builds the shared aws.Config.
func Load(ctx context.Context, o Options) (aws.Config, error) {
	endpoint := o.Endpoint
	if endpoint == "" {
		endpoint = EndpointFromEnv()
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return aws.Config{}, fmt.Errorf("awsconfig: endpoint %q is not an absolute URL (want e.g. http://127.0.0.1:4566)", endpoint)
		}
	}

	attempts := o.MaxAttempts
	if attempts < 1 {
		attempts = 1
	}

	// A BuildableClient (not a plain *http.Client) so the loader can still
	// apply AWS_CA_BUNDLE; the counter wraps it after loading.
	headerTimeout := o.ResponseHeaderTimeout
	if headerTimeout <= 0 {
		headerTimeout = DefaultResponseHeaderTimeout
	}
	// A response-header timeout so one hung connection fails its call
	// (and the caller retries on a fresh one) instead of blocking forever;
	// callers add per-call deadlines for slow bodies.
	httpClient := awshttp.NewBuildableClient().WithTimeout(o.HTTPTimeout).
		WithTransportOptions(func(tr *http.Transport) { tr.ResponseHeaderTimeout = headerTimeout })

	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer {
			return retry.AddWithMaxAttempts(retry.NewStandard(), attempts)
		}),
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(endpoint))
	}
	switch {
	case o.Credentials != nil:
		opts = append(opts, config.WithCredentialsProvider(o.Credentials))
	case endpoint != "" && isLoopback(endpoint) && !credentialSourceInEnv(os.Getenv):
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}

	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsconfig: load: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("awsconfig: no region: set region in the runtime config or AWS_REGION")
	}
	// Always: without it, concurrent SQS calls intermittently fail with
	// "use of closed network connection" (see closedBodySafe).
	cfg.HTTPClient = closedBodySafe{next: cfg.HTTPClient}
	if o.Counter != nil {
		cfg.HTTPClient = o.Counter.WrapClient(cfg.HTTPClient)
	}
	return cfg, nil
}

// credentialEnv lists the environment variables that name a credential
// source for the SDK's default chain (aws-sdk-go-v2/config env_config.go
// and resolve_credentials.go): static keys, the container provider (ECS
// task roles; EKS Pod Identity sets FULL_URI and the token file), web
// identity (IRSA), and a shared-config profile or file.
var credentialEnv = []string{
	"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
}

// credentialSourceInEnv reports whether the environment names any
// credential source; only when none is named may Load substitute kumo's
// dummy credentials.
func credentialSourceInEnv(getenv func(string) string) bool {
	for _, k := range credentialEnv {
		if getenv(k) != "" {
			return true
		}
	}
	return false
}

// isLoopback reports whether endpoint's host is localhost or a loopback IP.
func isLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	return localhttp.IsLoopbackName(u.Hostname())
}

// WithoutCRC32 disables DynamoDB's X-Amz-Crc32 response validation.
// For kumo only (it sends no CRC32 header); never in production.
func WithoutCRC32(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }

// SQS returns an SQS client for cfg.
func SQS(cfg aws.Config, optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(cfg, optFns...)
}

// DynamoDB returns a DynamoDB client for cfg; pass WithoutCRC32 for kumo.
func DynamoDB(cfg aws.Config, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, optFns...)
}

// S3 returns an S3 client for cfg. With an endpoint override it uses
// path-style addressing, since bucket.127.0.0.1 does not resolve.
func S3(cfg aws.Config, optFns ...func(*s3.Options)) *s3.Client {
	pathStyle := S3PathStyle(cfg)
	fns := append([]func(*s3.Options){func(o *s3.Options) { o.UsePathStyle = pathStyle }}, optFns...)
	return s3.NewFromConfig(cfg, fns...)
}

// S3PathStyle reports whether S3 clients for cfg should use path-style
// addressing: true whenever a base endpoint override is set.
func S3PathStyle(cfg aws.Config) bool {
	return cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != ""
}

// SFN returns a Step Functions client for cfg.
func SFN(cfg aws.Config, optFns ...func(*sfn.Options)) *sfn.Client {
	return sfn.NewFromConfig(cfg, optFns...)
}

// EventBridge returns an EventBridge client for cfg.
func EventBridge(cfg aws.Config, optFns ...func(*eventbridge.Options)) *eventbridge.Client {
	return eventbridge.NewFromConfig(cfg, optFns...)
}

// cliAttempts are the SDK attempts per call of a fleetc command (no queue retries it).
const cliAttempts = 3

// BucketEmptier is the S3 client fleetc destroy and fleetc dev's teardown empty buckets
// with: the emulator at endpoint with the dummy keys Terraform gets there, else AWS through
// the default credential chain; region "" means AWS_REGION.
func BucketEmptier(ctx context.Context, region, endpoint string) (*s3.Client, error) {
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	o := Options{Region: region, Endpoint: endpoint, MaxAttempts: cliAttempts}
	if endpoint != "" {
		o.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
	}
	cfg, err := Load(ctx, o)
	if err != nil {
		return nil, err
	}
	return S3(cfg), nil
}
