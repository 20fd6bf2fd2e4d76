package worker

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/jobstore"
	"github.com/fleetc/fleetc/runtime/llm"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/fromconfig"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/tools"
)

// newRouter builds the class's model router (nil when the class has no policy), with
// spans and per-policy metrics on the worker's telemetry. API keys named by api_key are
// read now (ctx bounds the reads): a key that cannot be read fails the start.
func newRouter(ctx context.Context, cfg *config.Config, awsCfg aws.Config, getenv func(string) string, tel *telemetry.Telemetry) (*router.Router, error) {
	if cfg.Models.Policy == "" {
		return nil, nil
	}
	policies, err := fromconfig.Policies(cfg.Models, fromconfig.Options{AWS: &awsCfg, BedrockEndpoint: getenv(config.EnvBedrockEndpoint), Getenv: getenv, Context: ctx})
	if err != nil {
		return nil, err
	}
	var o router.Options
	if tel != nil {
		o.Tracer = tel.Provider
		if o.Metrics, err = router.NewMetrics(tel.Metrics.Registry); err != nil {
			return nil, err
		}
	}
	return router.New(policies, o)
}

// llmFactory builds the llm handler on the router: the system prompt file is read at
// startup, so a missing prompt is a startup error, not a failed step.
func llmFactory(r *router.Router, cfg *config.Config, pub llm.Publisher, async *tools.Service) handler.LLMFactory {
	return func(h config.Handler, m config.Models) (handler.Handler, error) {
		if r == nil {
			return nil, fmt.Errorf("handler type llm: the class has no model policy")
		}
		system, err := llm.ReadSystem(h.System)
		if err != nil {
			return nil, err
		}
		source := "fleet." + cfg.Fleet
		if len(cfg.Events.Emits) > 0 {
			source = cfg.Events.Emits[0].Source
		}
		lc := llm.Config{Policy: m.Policy, System: system, Tools: h.Tools, MaxTokens: h.MaxTokens,
			MaxIterations: h.MaxIterations, EventSource: source, Async: async}
		if pub != nil {
			lc.Events = pub
		}
		return llm.New(lc, r)
	}
}

// llmToolKinds says whether an llm handler publishes events itself (it needs a batcher
// even when the class emits no completion event) and runs async tools (it needs the
// fleet's tools config, the jobs table and the bus).
func llmToolKinds(h config.Handler) (events, async bool) {
	if h.Type != config.HandlerLLM {
		return false, false
	}
	return llm.ToolKinds(h.Tools)
}

// asyncTools is the async tools service of an llm class that offers them: the tools config
// fleetc build wrote into the class's runtime config (async_tools: only the classes the
// handler names), on the worker's DynamoDB and EventBridge clients.
func asyncTools(cfg *config.Config, ddb jobstore.API, eb tools.PutEventsAPI) (*tools.Service, error) {
	tc := cfg.AsyncTools
	if tc == nil {
		return nil, fmt.Errorf("llm handler: async tools: the runtime config has no async_tools")
	}
	return tools.New(tc, &jobstore.Store{API: ddb, Table: tc.Table}, &tools.EventBridge{API: eb, Bus: tc.Bus})
}

// startGateway serves the router to an exec or http handler on loopback: an exec command
// gets the URLs and token in its environment, an http sidecar in the X-Fleet-Model-Gateway
// and X-Fleet-Model-Gateway-Token headers. Its series go to tel's registry, which the
// worker's metrics listener serves.
func startGateway(r *router.Router, cfg *config.Config, h handler.Handler, getenv func(string) string, tel *telemetry.Telemetry) (*gateway.Gateway, error) {
	if r == nil {
		return nil, nil
	}
	ex, isExec := h.(*handler.Exec)
	hh, isHTTP := h.(*handler.HTTP)
	if !isExec && !isHTTP {
		return nil, nil
	}
	var o gateway.Options
	if tel != nil {
		var err error
		if o.Metrics, err = gateway.NewMetrics(tel.Metrics.Registry); err != nil {
			return nil, err
		}
	}
	gw, err := gateway.StartWith(r, cfg.Models.Policy, getenv(config.EnvModelGatewayAddr), cfg.Step.Max(), o)
	if err != nil {
		return nil, err
	}
	if isExec {
		ex.Env = append(ex.Env, gw.Env()...)
	} else {
		hh.ModelGateway, hh.ModelGatewayToken = gw.URL()+"/v1", gw.Token()
	}
	return gw, nil
}

func closeGateway(ctx context.Context, gw *gateway.Gateway) error {
	if gw == nil {
		return nil
	}
	return gw.Close(ctx)
}

// ServeGateway serves cfg's model gateway alone on listen (default 127.0.0.1:0): no
// queue, no AWS call besides Bedrock's, so a handler author runs their code locally
// against the fleet's real model policy (fleet-worker gateway).
// The gateway serves GET /metrics from tel's registry, its own series included; o sets the
// rest (admission bound).
func ServeGateway(ctx context.Context, cfg *config.Config, listen string, getenv func(string) string, tel *telemetry.Telemetry, o gateway.Options) (*gateway.Gateway, error) {
	if cfg.Models.Policy == "" {
		return nil, fmt.Errorf("class %s has no model policy: nothing to serve", cfg.Class)
	}
	awsCfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: cfg.Region})
	if err != nil {
		return nil, err
	}
	r, err := newRouter(ctx, cfg, awsCfg, getenv, tel)
	if err != nil {
		return nil, err
	}
	if listen == "" {
		listen = getenv(config.EnvModelGatewayAddr)
	}
	if tel != nil {
		if o.Metrics, err = gateway.NewMetrics(tel.Metrics.Registry); err != nil {
			return nil, err
		}
		o.MetricsHandler = tel.Metrics.Handler()
	}
	return gateway.StartWith(r, cfg.Models.Policy, listen, cfg.Step.Max(), o)
}
