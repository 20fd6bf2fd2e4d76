package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/fleetc/fleetc/internal/localhttp"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/config/s3config"
	"github.com/fleetc/fleetc/runtime/jobstore"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// Environment of fleet-worker --mode tools.
const (
	EnvToolsJSON   = config.EnvToolsJSON
	EnvToolsConfig = config.EnvToolsConfig
	EnvToolsS3     = config.EnvToolsS3
	envLambdaAPI   = "AWS_LAMBDA_RUNTIME_API"
)

// LoadConfig reads the tools config from path, else the environment: the S3 object the
// generated function names (hash-checked, s3config.Fetch), inline JSON, or a path.
func LoadConfig(ctx context.Context, path string, getenv func(string) string) (*rc.Tools, error) {
	switch {
	case path != "":
	case getenv(EnvToolsS3) != "":
		r, err := config.ParseObjectRef(EnvToolsS3, getenv(EnvToolsS3))
		if err != nil {
			return nil, err
		}
		api, err := s3config.NewGetter(ctx, getenv)
		if err != nil {
			return nil, err
		}
		raw, err := s3config.Fetch(ctx, api, r)
		if err != nil {
			return nil, err
		}
		return rc.ParseTools("s3://"+r.Bucket+"/"+r.Key, raw)
	case getenv(EnvToolsJSON) != "":
		return rc.ParseTools(EnvToolsJSON, []byte(getenv(EnvToolsJSON)))
	case getenv(EnvToolsConfig) != "":
		path = getenv(EnvToolsConfig)
	default:
		return nil, fmt.Errorf("tools mode needs --tools-config (or %s / %s / %s in the environment)", EnvToolsS3, EnvToolsJSON, EnvToolsConfig)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return rc.ParseTools(path, b)
}

// NewAWS builds the service on the AWS clients awsconfig gives (kumo when FLEET_AWS_ENDPOINT
// points there).
func NewAWS(ctx context.Context, cfg *rc.Tools) (*Service, error) {
	awsCfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: cfg.Region, MaxAttempts: 3})
	if err != nil {
		return nil, err
	}
	ddb := awsconfig.DynamoDB(awsCfg)
	if awsconfig.EndpointFromEnv() != "" {
		ddb = awsconfig.DynamoDB(awsCfg, awsconfig.WithoutCRC32)
	}
	return New(cfg, &jobstore.Store{API: ddb, Table: cfg.Table}, &EventBridge{API: awsconfig.EventBridge(awsCfg), Bus: cfg.Bus})
}

// DefaultListen is the local listener's address when --listen names none.
const DefaultListen = localhttp.DefaultHost + ":8080"

// Run serves the tools until ctx ends: as a Lambda function when the Lambda runtime API is
// present, else as an HTTP server on listen (HTTP+JSON under /tools/, MCP at /mcp). The
// local listener believes the principal header, so it is loopback only and localhttp guards
// it: a page the developer opens cannot start or read jobs through it.
func Run(ctx context.Context, s *Service, getenv func(string) string, listen string, log *slog.Logger) error {
	if getenv(envLambdaAPI) != "" {
		lambda.StartWithOptions(s.HandleLambda, lambda.WithContext(ctx))
		return nil
	}
	h, err := s.Handler()
	if err != nil {
		return err
	}
	if listen == "" {
		listen = DefaultListen
	}
	ln, err := localhttp.Listen(listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: localhttp.Guard(h), ReadHeaderTimeout: 10 * time.Second}
	log.Info("async tools listening", "addr", ln.Addr().String(), "tools", s.Names())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
