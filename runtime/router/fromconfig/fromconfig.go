// Package fromconfig maps a runtime config's models section onto router policies: the
// thin adapter between the config types and the router's own.
//
// Numbers are per process: fleet.yaml's max_in_flight and tokens_per_minute are
// fleet-wide, and fleetc divides them by the class's replica count before writing the
// runtime config (see docs/gateway.md, "Model router").
package fromconfig

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/apikey"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
	"github.com/fleetc/fleetc/runtime/router/openai"
	"github.com/fleetc/fleetc/runtime/router/transport"
)

// Options supply what the config does not hold.
type Options struct {
	// AWS builds the Bedrock client (needed only when a target is bedrock/…).
	AWS *aws.Config
	// BedrockEndpoint overrides the Bedrock Runtime endpoint ("" = the region's).
	BedrockEndpoint string
	// Getenv reads the API-key variables policies name (os.Getenv in fleet-worker).
	Getenv func(string) string
	// HTTP is the client for OpenAI-compatible targets (nil: one pooled client per
	// base_url, see runtime/router/transport).
	HTTP *http.Client
	// Context bounds the API-key reads made at start (nil: context.Background()).
	Context context.Context
	// Secrets and Parameters read api_key secrets and parameters (nil: clients on AWS, in
	// the region an ARN names, else AWS's).
	Secrets    func(region string) apikey.SecretsAPI
	Parameters func(region string) apikey.ParametersAPI
}

// poolSizes sums, per provider endpoint ("bedrock" or an OpenAI base_url), the calls this
// process may have in flight to it: the idle pool each endpoint's transport keeps.
func poolSizes(m config.Models) map[string]int {
	out := map[string]int{}
	for _, mp := range m.Policies {
		n := share(mp.MaxInFlight, mp.Processes)
		if n <= 0 {
			n = transport.DefaultIdle
		}
		seen := map[string]bool{}
		for _, target := range mp.Targets {
			key := mp.BaseURL
			if strings.HasPrefix(target, "bedrock/") {
				key = "bedrock"
			}
			if !seen[key] {
				seen[key] = true
				out[key] += n
			}
		}
	}
	return out
}

// share is this process's part of a fleet-wide number: rounded down so the processes
// together never exceed it, but at least 1 so a capped policy stays callable (0 = no cap).
func share(fleetWide, processes int) int {
	if fleetWide <= 0 || processes <= 1 {
		return fleetWide
	}
	return max(1, fleetWide/processes)
}

// FailWindow is the window allowed_fails counts in (LiteLLM's is a minute too).
const FailWindow = time.Minute

// Policies builds the router policies for every policy in m, sorted by name.
func Policies(m config.Models, o Options) ([]router.Policy, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	keys := &keyring{o: o, getenv: getenv, read: map[config.APIKey]*apikey.Source{}}
	var br *bedrock.Provider
	pools := poolSizes(m)
	clients := map[string]*http.Client{} // one pooled client per OpenAI base_url
	var out []router.Policy
	for _, name := range slices.Sorted(maps.Keys(m.Policies)) {
		mp := m.Policies[name]
		p := router.Policy{
			Name: name, Fallbacks: mp.Fallbacks, ContextWindowFallbacks: mp.ContextWindowFallbacks,
			Retries: mp.Retries, Timeout: time.Duration(mp.TimeoutSeconds) * time.Second,
			AllowedFails: mp.AllowedFails, FailWindow: FailWindow, Cooldown: time.Duration(mp.CooldownSeconds) * time.Second,
			MaxInFlight: share(mp.MaxInFlight, mp.Processes), TokensPerMinute: share(mp.TokensPerMinute, mp.Processes),
		}
		var oa *openai.Client
		for _, target := range mp.Targets {
			provider, model, ok := strings.Cut(target, "/")
			if !ok || model == "" {
				return nil, fmt.Errorf("model policy %s: target %q is not provider/model", name, target)
			}
			d := router.Deployment{Name: target, Model: model}
			switch provider {
			case "bedrock":
				if br == nil {
					if o.AWS == nil {
						return nil, fmt.Errorf("model policy %s: target %q needs AWS configuration", name, target)
					}
					br = &bedrock.Provider{API: bedrock.NewClient(*o.AWS, o.BedrockEndpoint, transport.New(pools["bedrock"]))}
				}
				d.Provider = br
			case "openai":
				if mp.BaseURL == "" {
					return nil, fmt.Errorf("model policy %s: target %q needs base_url", name, target)
				}
				if oa == nil {
					hc := o.HTTP
					if hc == nil {
						if hc = clients[mp.BaseURL]; hc == nil {
							hc = transport.New(pools[mp.BaseURL])
							clients[mp.BaseURL] = hc
						}
					}
					oa = &openai.Client{BaseURL: mp.BaseURL, HTTP: hc}
					var err error
					if oa.Keys, err = keys.source(name, mp); err != nil {
						return nil, err
					}
				}
				d.Provider = oa
			default:
				return nil, fmt.Errorf("model policy %s: target %q: unknown provider %q (want bedrock or openai)", name, target, provider)
			}
			p.Deployments = append(p.Deployments, d)
		}
		out = append(out, p)
	}
	return out, nil
}

// keyring finds each policy's API key: the variable api_key_env names when it is set
// (fleetc dev, a local run), else the secret or parameter api_key names (a deployed
// worker). Policies naming the same secret share one read and one rotation.
type keyring struct {
	o      Options
	getenv func(string) string
	read   map[config.APIKey]*apikey.Source
}

// source is policy name's key; nil when the policy names none (an endpoint without auth).
func (k *keyring) source(name string, mp config.ModelPolicy) (*apikey.Source, error) {
	if mp.APIKeyEnv != "" {
		if v := k.getenv(mp.APIKeyEnv); v != "" {
			return apikey.Static(v), nil
		}
		if mp.APIKey == nil {
			return nil, fmt.Errorf("model policy %s: environment variable %s (api_key_env) is empty and the policy names no api_key", name, mp.APIKeyEnv)
		}
	}
	if mp.APIKey == nil {
		return nil, nil
	}
	ref := *mp.APIKey
	if s := k.read[ref]; s != nil {
		return s, nil
	}
	fetch, err := Fetcher(k.o, ref)
	if err != nil {
		return nil, fmt.Errorf("model policy %s: %w", name, err)
	}
	ctx := k.o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := apikey.New(ctx, fetch)
	if err != nil {
		return nil, fmt.Errorf("model policy %s: api_key: %w", name, err)
	}
	k.read[ref] = s
	return s, nil
}

// Fetcher reads ref from its service, in the region its ARN names (a name: the worker's),
// with o's clients (o.Secrets, o.Parameters, else clients on o.AWS).
func Fetcher(o Options, ref config.APIKey) (apikey.Fetch, error) {
	switch {
	case ref.Secret != "":
		api := o.Secrets
		if api == nil {
			if o.AWS == nil {
				return nil, fmt.Errorf("api_key secret %s needs AWS configuration", ref.Secret)
			}
			api = func(region string) apikey.SecretsAPI {
				return secretsmanager.NewFromConfig(*o.AWS, func(o *secretsmanager.Options) { regionOf(&o.Region, region) })
			}
		}
		return apikey.FromSecret(api(apikey.Region(ref.Secret)), ref.Secret, ref.JSONKey), nil
	case ref.SSM != "":
		api := o.Parameters
		if api == nil {
			if o.AWS == nil {
				return nil, fmt.Errorf("api_key parameter %s needs AWS configuration", ref.SSM)
			}
			api = func(region string) apikey.ParametersAPI {
				return ssm.NewFromConfig(*o.AWS, func(o *ssm.Options) { regionOf(&o.Region, region) })
			}
		}
		return apikey.FromParameter(api(apikey.Region(ref.SSM)), ref.SSM), nil
	}
	return nil, fmt.Errorf("api_key names neither a secret nor an ssm parameter")
}

// regionOf sets a client's region to the one an ARN named, if any.
func regionOf(client *string, region string) {
	if region != "" {
		*client = region
	}
}
