// Command fleet-worker runs one agent class's steps from the runtime config
// `fleetc build` wrote: as a long-running SQS poller (EKS/KEDA), a Lambda
// SQS handler, or an AgentCore runtime; or, for an AgentCore class, as the dispatcher that
// feeds that runtime from the class queue (--mode dispatch).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/fleetc/fleetc/internal/buildinfo"
	"github.com/fleetc/fleetc/runtime/agentcore"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/config/s3config"
	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/lambda"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/gateway/gatewayenv"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/tools"
	"github.com/fleetc/fleetc/runtime/worker"
	"github.com/fleetc/fleetc/schemas/contract"
)

// gcPercent is fleet-worker's GOGC unless the environment sets one. The worker waits on the
// network with a small live heap, much of it the AWS SDK's per-service schemas built at init,
// so collecting at half the default growth costs no measurable CPU and keeps its peak RSS
// inside the budget TestBinaryPeakRSS holds (measured in docs/internals/testing.md).
const gcPercent = 50

// setGCDefault applies gcPercent unless GOGC is set. Called from main, not Main, so a
// program embedding Main keeps its own GC setting.
func setGCDefault(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

func main() {
	setGCDefault(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Modes.
const (
	ModePoll      = "poll"
	ModeLambda    = "lambda"
	ModeAgentCore = "agentcore"
	ModeDispatch  = "dispatch"
	// ModeTools serves the async tools (start_*, get_*_status, list_my_jobs) from the tools
	// config, as a Lambda function or an HTTP+JSON/MCP server.
	ModeTools = "tools"
)

// agentcoreListen is where an AgentCore runtime container answers (its service contract:
// port 8080 on every interface).
const agentcoreListen = ":" + config.AgentCorePort

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2 // bad flags or config: nothing was touched
)

// Main runs fleet-worker until ctx ends (SIGTERM), then drains in-flight
// steps, flushes events and, last, telemetry. It returns the exit code.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "gateway" {
		return Gateway(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == contract.DryRunCommand {
		return dryRun(args[1:], stdout, stderr)
	}
	fl, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	if fl.version {
		fmt.Fprintf(stdout, "fleet-worker %s\n", buildinfo.Version)
		return exitOK
	}
	if fl.mode == ModeTools || (fl.mode == "" && getenv(config.EnvMode) == ModeTools) {
		return runTools(ctx, fl.toolsConfig, fl.listen, getenv, stderr)
	}
	cfg, err := loadConfig(ctx, fl.config, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitUsage
	}
	m, err := resolveMode(fl.mode, cfg, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitUsage
	}
	// Lambda freezes the process between invocations, so there each span is exported as it ends.
	tel, err := newTelemetry(ctx, getenv, telemetry.Options{ServiceName: cfg.Telemetry.ServiceName, Class: cfg.Class, LogWriter: stderr,
		SyncExport: m == ModeLambda || (m == ModeDispatch && getenv("AWS_LAMBDA_RUNTIME_API") != "")})
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitUsage
	}
	log := tel.Logger
	// Telemetry flushes last, after the queue drained and events flushed.
	defer func() {
		if err := shutdownTelemetry(ctx, tel); err != nil {
			log.Warn("telemetry shutdown", "err", err)
		}
	}()
	if addr := cfg.Telemetry.MetricsAddr; addr != "" && m != ModeLambda {
		bound, err := tel.ServeMetrics(addr)
		if err != nil {
			fmt.Fprintln(stderr, "fleet-worker: metrics listener:", err)
			return exitRuntime
		}
		log.Info("metrics listening", "addr", bound.String())
	}
	rt, err := worker.Build(ctx, cfg, worker.BuildOptions{Getenv: getenv, Logger: log, Telemetry: tel, NoQueue: m == ModeAgentCore && cfg.QueueURL == ""})
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker: startup:", err)
		return exitRuntime
	}
	log.Info("fleet-worker started", "mode", m, "queue", cfg.QueueURL, "concurrency", cfg.Concurrency)
	if fl.listen == "" {
		fl.listen = agentcoreListen
	}
	return run(ctx, rt, m, fl.listen, fl.drain, getenv, log)
}

// run serves in mode m until ctx ends, then flushes the runtime's events, whatever ended it.
func run(ctx context.Context, rt *worker.Runtime, m, listen string, drain time.Duration, getenv func(string) string, log *slog.Logger) int {
	runErr := serve(ctx, rt, m, listen, drain, getenv)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := rt.Close(fctx); err != nil {
		log.Error("events flush failed", "err", err)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		log.Error("fleet-worker stopped", "err", runErr)
		return exitRuntime
	}
	log.Info("fleet-worker stopped")
	return exitOK
}

// flags are fleet-worker's command-line flags.
type flags struct {
	config, mode, listen, toolsConfig string
	drain                             time.Duration
	version                           bool
}

// parseFlags reads args; when it returns ok false, the program exits with code (-h is no
// error, the usage went to stderr).
func parseFlags(args []string, stderr io.Writer) (fl flags, code int, ok bool) {
	fs := flag.NewFlagSet("fleet-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&fl.config, "config", "", "runtime config written by fleetc build (out/runtime/<class>.json)")
	fs.StringVar(&fl.mode, "mode", "", "poll | lambda | agentcore | dispatch | tools (default: from the config's runtime: eks→poll); dispatch feeds an agentcore class's runtime from its queue, as a Lambda function when AWS_LAMBDA_RUNTIME_API is set")
	fs.DurationVar(&fl.drain, "drain-timeout", 25*time.Second, "shutdown budget from SIGTERM: the last long poll and in-flight steps, then they are cancelled")
	fs.StringVar(&fl.listen, "listen", "", "agentcore and tools modes: HTTP listen address (agentcore: default "+agentcoreListen+"; tools: loopback only, default "+tools.DefaultListen+")")
	fs.StringVar(&fl.toolsConfig, "tools-config", "", "tools mode: the tools config fleetc build wrote (out/tools/tools.json)")
	fs.BoolVar(&fl.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fl, exitOK, false
		}
		return fl, exitUsage, false
	}
	return fl, exitOK, true
}

// loadConfig reads the runtime config from --config, else the environment (the S3 object
// the generated Terraform names, inline JSON, then a path), and applies the environment's
// overrides.
func loadConfig(ctx context.Context, path string, getenv func(string) string) (*config.Config, error) {
	var cfg *config.Config
	var err error
	switch {
	case path != "":
		cfg, err = config.Load(path)
	case getenv(config.EnvConfigS3) != "":
		var s3 s3config.Getter
		if s3, err = s3config.NewGetter(ctx, getenv); err == nil {
			cfg, err = s3config.Load(ctx, s3, config.EnvConfigS3, getenv(config.EnvConfigS3))
		}
	case getenv(config.EnvConfigJSON) != "":
		cfg, err = config.Parse(config.EnvConfigJSON, []byte(getenv(config.EnvConfigJSON)))
	case getenv(config.EnvConfigPath) != "":
		cfg, err = config.Load(getenv(config.EnvConfigPath))
	default:
		return nil, fmt.Errorf("--config is required (or %s / %s / %s in the environment)", config.EnvConfigS3, config.EnvConfigJSON, config.EnvConfigPath)
	}
	if err != nil {
		return nil, err
	}
	if err := cfg.ApplyEnv(getenv); err != nil {
		return nil, err
	}
	return cfg, nil
}

// resolveMode picks the mode: --mode, else the environment's, else the one the
// config's runtime implies; dispatch needs an agentcore class and its runtime ARN.
func resolveMode(flagMode string, cfg *config.Config, getenv func(string) string) (string, error) {
	m := flagMode
	if m == "" {
		m = getenv(config.EnvMode)
	}
	if m == "" {
		m = map[string]string{config.RuntimeEKS: ModePoll, config.RuntimeLambda: ModeLambda, config.RuntimeAgentCore: ModeAgentCore}[cfg.Runtime]
	}
	if m != ModePoll && m != ModeLambda && m != ModeAgentCore && m != ModeDispatch {
		return "", fmt.Errorf("--mode %q: want poll, lambda, agentcore or dispatch", m)
	}
	if m == ModeDispatch && (cfg.Runtime != config.RuntimeAgentCore || getenv(config.EnvAgentRuntimeARN) == "") {
		return "", fmt.Errorf("--mode dispatch feeds an agentcore class's runtime: needs runtime agentcore (config says %q) and %s", cfg.Runtime, config.EnvAgentRuntimeARN)
	}
	return m, nil
}

// serve runs the worker in mode m until ctx ends and its drain is over.
func serve(ctx context.Context, rt *worker.Runtime, m, listen string, drain time.Duration, getenv func(string) string) error {
	switch m {
	case ModePoll:
		return rt.RunPoll(ctx, drain)
	case ModeLambda:
		return lambda.Run(ctx, rt.Host(), getenv)
	case ModeAgentCore:
		return agentcore.Run(ctx, rt.Host(), listen, drain)
	case ModeDispatch:
		return dispatch.Run(ctx, rt.Host(), getenv, drain)
	}
	return nil
}

// newTelemetry starts telemetry with spans going to the collector the standard
// OTEL_EXPORTER_OTLP_* variables name.
func newTelemetry(ctx context.Context, getenv func(string) string, o telemetry.Options) (*telemetry.Telemetry, error) {
	exporter, err := telemetry.OTLPExporter(ctx, getenv)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	o.SpanExporter = exporter
	return telemetry.New(o)
}

// shutdownTelemetry flushes telemetry within 5 s, even after ctx ended.
func shutdownTelemetry(ctx context.Context, tel *telemetry.Telemetry) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return tel.Shutdown(sctx)
}

// Gateway serves one class's model gateway alone (fleet-worker gateway --config FILE
// [--listen ADDR] [--max-waiting N]), with GET /metrics on the same listener, until ctx
// ends, after printing the environment a handler needs.
func Gateway(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet-worker gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "runtime config written by fleetc build (out/runtime/<class>.json)")
	listen := fs.String("listen", "", "loopback address (default "+config.EnvModelGatewayAddr+", else 127.0.0.1:0, a free port)")
	maxWaiting := fs.Int("max-waiting", 0, fmt.Sprintf("requests each policy may hold waiting for capacity beyond its max_in_flight; past it a 429 (default %d per max_in_flight slot)", gateway.DefaultWaitingPerSlot))
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *cfgPath == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: fleet-worker gateway --config FILE [--listen ADDR] [--max-waiting N]")
		return exitUsage
	}
	cfg, err := config.Load(*cfgPath)
	if err == nil {
		err = cfg.ApplyEnv(getenv)
	}
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitUsage
	}
	tel, err := newTelemetry(ctx, getenv, telemetry.Options{ServiceName: cfg.Telemetry.ServiceName, Class: cfg.Class, LogWriter: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitUsage
	}
	defer func() { _ = shutdownTelemetry(ctx, tel) }()
	gw, err := worker.ServeGateway(ctx, cfg, *listen, getenv, tel, gateway.Options{MaxWaiting: *maxWaiting})
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker: gateway:", err)
		return exitRuntime
	}
	// What a handler exports: the fleet's own names, and the ones the SDKs read.
	url, token := gw.URL(), gw.Token()
	for _, kv := range [][2]string{
		{gatewayenv.URL, url + "/v1"}, {gatewayenv.BedrockURL, url}, {gatewayenv.Token, token},
		{"OPENAI_BASE_URL", url + "/v1"}, {"OPENAI_API_KEY", token},
		{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME", url}, {"AWS_BEARER_TOKEN_BEDROCK", token},
	} {
		fmt.Fprintf(stdout, "export %s=%s\n", kv[0], kv[1])
	}
	tel.Logger.Info("model gateway serving", "class", cfg.Class, "policy", cfg.Models.Policy, "url", url)
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := gw.Close(cctx); err != nil {
		tel.Logger.Warn("model gateway close", "err", err)
	}
	return exitOK
}

// runTools is --mode tools: the agent side of the async tools.
func runTools(ctx context.Context, path, listen string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := tools.LoadConfig(ctx, path, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitUsage
	}
	// Every call is an execute_tool span, exported like the worker's (OTEL_EXPORTER_OTLP_*);
	// on Lambda each span is exported as it ends.
	tel, err := newTelemetry(ctx, getenv, telemetry.Options{ServiceName: cfg.Fleet + "-async-tools", LogWriter: stderr,
		SyncExport: getenv("AWS_LAMBDA_RUNTIME_API") != ""})
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitUsage
	}
	defer func() { _ = shutdownTelemetry(ctx, tel) }()
	log := tel.Logger
	svc, err := tools.NewAWS(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-worker: startup:", err)
		return exitRuntime
	}
	svc.Tracer = tel.Provider
	if err := tools.Run(ctx, svc, getenv, listen, log); err != nil {
		fmt.Fprintln(stderr, "fleet-worker:", err)
		return exitRuntime
	}
	return exitOK
}
