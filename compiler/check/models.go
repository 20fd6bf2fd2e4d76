package check

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

var modelRules = []Rule{
	{
		ID: "M001", Category: "models", Severity: diag.Error,
		Summary: "model policies used by classes have a cross-group fallback that leaves the failure domain",
		Explain: `With LiteLLM, in-group retries alone leaked errors when a deployment was hard-down (28/30
requests succeeded); explicit cross-group fallbacks gave 30/30: "leave the failure domain"
rather than retry harder inside it.
A policy a class uses without fallbacks warns. A fallback that points back into its own
group (itself, a policy sharing one of its targets, or a chain that loops back to it) is
an error: it retries the outage it meant to escape.
Fix: add fallbacks: [<policy on another model family or region>] with distinct targets.`,
		Check: checkFallbacks,
	},
	{
		ID: "M002", Category: "models", Severity: diag.Warning,
		Summary: "in-group retries ≤ 3, and model-call retries at one layer",
		Explain: `Retries are selfish: in a five-deep stack where each layer retries three times, load on
the bottom grows 243× (Brooker). AWS's answer is to retry at a single point in the stack.
The queue already redelivers a failed step (max_receives), so the router's in-group
retries and the provider SDK's retries multiply under it: (1 + sdk_retries) ×
(1 + retries) calls per step attempt. More than 3 in-group retries warns; SDK and router
retries both on warns.
Fix: keep sdk_retries: 0 (fleetc's default) and retries ≤ 3 (default 2).`,
		Check: checkRetryLayers,
	},
	{
		ID: "M003", Category: "models", Severity: diag.Error,
		Summary: "model timeout ≤ the step's deadline; heartbeat window above the model timeout",
		Explain: `A model call must fit the step: give every run a deadline and each step what is left of it
(a run that has spent 50 s of a 60 s budget should not start a 10-minute call; the SDKs
default to 10 minutes). The longest call is the largest timeout in the class's policy and
its fallbacks; it must not exceed step.deadline (step.max when no deadline is set). A
policy that writes no timeout gets the default (2m) cut to each class's deadline, as
fleet-worker cuts every call at it: only a timeout the spec writes is judged.
A worker that heartbeats cannot extend visibility while blocked in a call, so the
visibility window must exceed that call too.
Fix: lower the policy's timeout, or raise step.deadline / queue.visibility.`,
		Check: checkModelTimeouts,
	},
	{
		ID: "M004", Category: "models", Severity: diag.Warning,
		Summary: "fallback policies have a concurrency cap (max_in_flight)",
		Explain: `When the primary provider rate-limits the whole fleet, the fallback model family inherits
the entire load in one retry wave. Gate the fallback with the same concurrency semaphore
as the primary, or the router converts a primary outage into a fallback outage about
ninety seconds later.
Check: every policy reachable as a fallback from a class's policy sets max_in_flight.
Fix: set max_in_flight on the fallback policy, sized from its tokens_per_minute budget.`,
		Check: checkFallbackCaps,
	},
	{
		ID: "M005", Category: "models", Severity: diag.Error,
		Summary: "spend-limit 429s (no retry-after) are never retried: no SDK retries",
		Explain: `A 429 caused by hitting the spend limit has no retry-after header, and retrying, "including
the SDK's automatic retries", fails until access resumes. fleet-worker's router treats such
a 429 as permanent and dead-letters the step with code SpendLimit so a human sees it.
Provider SDKs retry 429s blindly (2 times by default), so any sdk_retries > 0 would retry
spend-limit 429s before the router can classify them. This rule checks that no policy
enables SDK retries; the runtime behaviour itself is tested in runtime/retry.
Fix: set sdk_retries: 0 (fleetc's default); let the queue be the retry layer.`,
		Check: checkSpendLimitRetries,
	},
	{
		ID: "M006", Category: "models", Severity: diag.Error,
		Summary: "model targets name a provider fleet-worker speaks; openai/ targets have a base_url and no key in the spec",
		Explain: `fleet-worker's router calls two kinds of provider: bedrock/<model id> (Bedrock Converse
through the AWS SDK, IAM from the class's role) and openai/<model> (any OpenAI-compatible
chat-completions endpoint: OpenAI, a LiteLLM proxy, vLLM, a local server). An openai target
needs the policy's base_url; its API key is never in fleet.yaml (the spec is reviewed and
committed; a key in it leaks): api_key names the Secrets Manager secret or SSM parameter
that holds it, api_key_env the variable that holds it on a developer's machine (M007).
A target of another provider would fail every call at worker start.
Fix: use bedrock/<id> or openai/<model> with base_url (and api_key if it needs a key).`,
		Check: checkTargets,
	},
	{
		ID: "M007", Category: "models", Severity: diag.Error,
		Summary: "a policy whose openai/ targets need an API key names where a deployed worker reads it (api_key)",
		Explain: `A policy needs a key when it names api_key_env or its base_url is a hosted API that always
asks for one (api.openai.com). Nothing sets api_key_env in a deployed Lambda function, EKS
pod or AgentCore runtime: fleet-worker would refuse to start or dead-letter every step with
a 401. A deployed worker reads api_key: a Secrets Manager secret (json_key: one field of a
JSON secret) or an SSM SecureString parameter. The class's role gets exactly
secretsmanager:GetSecretValue on that secret (a name gets AWS's -?????? suffix) or
ssm:GetParameter on that parameter, and kms:Decrypt via that service when kms_key names the
key; the worker reads it at start and after a 401 (rotation, no restart). The value never
enters fleet.yaml, Terraform, the environment, logs or spans. fleetc dev runs workers on
your machine: api_key_env alone is enough there.
Fix: api_key: { secret: <name or ARN>, json_key: <field> } or api_key: { ssm: <parameter> }.`,
		Check: checkKeySources,
	},
}

// keyedHosts are hosted APIs that refuse every call without a key, whatever the spec says.
var keyedHosts = []string{"api.openai.com"}

// needsKey reports whether policy m's openai/ targets need an API key, and the spec value
// that says so (its pointer).
func needsKey(m *ir.Model) (string, bool) {
	if !slices.ContainsFunc(m.Targets, func(t string) bool { return strings.HasPrefix(t, "openai/") }) {
		return "", false
	}
	if m.APIKeyEnv != "" {
		return m.Path + "/api_key_env", true
	}
	if u, err := url.Parse(m.BaseURL); err == nil && slices.Contains(keyedHosts, u.Hostname()) {
		return m.Path + "/base_url", true
	}
	return "", false
}

// checkKeySources enforces M007: a deployed build has a key source for every keyed policy.
func checkKeySources(f *ir.Fleet, r *Reporter) {
	if f.Local {
		return // fleetc dev: workers inherit api_key_env from the developer's shell
	}
	for _, m := range f.Models {
		path, keyed := needsKey(m)
		if !keyed || m.APIKey != nil {
			continue
		}
		why := "its base_url " + m.BaseURL + " needs an API key"
		if m.APIKeyEnv != "" {
			why = "api_key_env " + m.APIKeyEnv + " is set by nothing in a deployed worker"
		}
		r.Add(path, fmt.Sprintf("model policy %s has no API key source in a deployed build: %s", m.Name, why),
			"Store the key in Secrets Manager and add api_key: { secret: <name or ARN>, json_key: <field, if the secret is JSON> } "+
				"(or api_key: { ssm: <SecureString parameter> }); keep api_key_env for fleetc dev.")
	}
}

// checkTargets enforces M006.
func checkTargets(f *ir.Fleet, r *Reporter) {
	for _, m := range f.Models {
		openai := false
		for i, t := range m.Targets {
			provider, _, _ := strings.Cut(t, "/")
			switch provider {
			case "bedrock":
			case "openai":
				openai = true
			default:
				r.Add(m.Path+"/targets/"+strconv.Itoa(i),
					fmt.Sprintf("model policy %s: target %s: fleet-worker has no %q provider", m.Name, t, provider),
					"Use bedrock/<model id>, or openai/<model> with base_url for an OpenAI-compatible endpoint.")
			}
		}
		if openai && m.BaseURL == "" {
			r.Add(m.Path, fmt.Sprintf("model policy %s has openai/ targets but no base_url", m.Name),
				"Set base_url to the OpenAI-compatible endpoint, e.g. https://api.openai.com/v1.")
		}
		if !openai && (m.BaseURL != "" || m.APIKeyEnv != "" || m.APIKey != nil) {
			r.Add(at(f, m.Path+"/base_url", m.Path), fmt.Sprintf("model policy %s sets base_url/api_key_env/api_key but has no openai/ target", m.Name),
				"Remove them, or add an openai/<model> target.")
		}
		if u, err := url.Parse(m.BaseURL); m.BaseURL != "" && err == nil && u.User != nil {
			r.Add(m.Path+"/base_url", fmt.Sprintf("model policy %s: base_url carries credentials", m.Name),
				"Store the key in Secrets Manager and name it in api_key: { secret: <name or ARN> } (api_key_env for fleetc dev).")
		}
	}
}

// usedPolicies are the policies some class asks for directly.
func usedPolicies(f *ir.Fleet) map[*ir.Model]bool {
	used := map[*ir.Model]bool{}
	for _, a := range f.Agents {
		if a.Model != nil {
			used[a.Model] = true
		}
	}
	return used
}

func sharesTarget(a, b *ir.Model) string {
	for _, x := range a.Targets {
		for _, y := range b.Targets {
			if x == y {
				return x
			}
		}
	}
	return ""
}

func checkFallbacks(f *ir.Fleet, r *Reporter) {
	used := usedPolicies(f)
	for _, m := range f.Models {
		if used[m] && len(m.Fallbacks) == 0 {
			r.Warn(m.Path,
				fmt.Sprintf("model policy %s has no cross-group fallback: an outage of its targets fails every step that uses it", m.Name),
				"Add fallbacks: [a policy on another model family or region].")
		}
		for i, fb := range m.Fallbacks {
			path := m.Path + "/fallbacks/" + strconv.Itoa(i)
			switch t := sharesTarget(m, fb); {
			case fb == m:
				r.Add(path, fmt.Sprintf("model policy %s falls back to itself", m.Name),
					"Point the fallback at a policy with different targets.")
			case t != "":
				r.Add(path, fmt.Sprintf("model policy %s falls back to %s, which shares target %s: the fallback stays in the failure domain", m.Name, fb.Name, t),
					"Point the fallback at a policy with different targets.")
			default:
				for _, c := range chain(fb)[1:] {
					if c == m {
						r.Add(path, fmt.Sprintf("model policy %s's fallback chain through %s loops back to %s", m.Name, fb.Name, m.Name),
							"End the fallback chain at a policy without fallbacks.")
						break
					}
				}
			}
		}
	}
}

func checkRetryLayers(f *ir.Fleet, r *Reporter) {
	for _, m := range f.Models {
		if m.Retries > maxInGroupRetries {
			r.Add(m.Path+"/retries",
				fmt.Sprintf("model policy %s retries %d times in-group: retry amplification against a struggling provider", m.Name, m.Retries),
				"Set retries to 3 or less (2 is fleetc's default) and rely on cross-group fallbacks.")
		}
		if m.SDKRetries > 0 && m.Retries > 0 {
			r.Add(m.Path+"/sdk_retries",
				fmt.Sprintf("model policy %s retries at two layers, SDK %d × router %d: %d calls per step attempt before the queue redelivers",
					m.Name, m.SDKRetries, m.Retries, (1+m.SDKRetries)*(1+m.Retries)),
				"Retry at one point: set sdk_retries: 0.")
		}
	}
}

func checkModelTimeouts(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		limit, what := stepDeadline(a), "step.max"
		if a.Deadline > 0 {
			what = "step.deadline"
		}
		call, m := longestModelCall(a, limit)
		if m == nil {
			continue
		}
		if call > limit {
			r.Add(at(f, m.Path+"/timeout", m.Path),
				fmt.Sprintf("class %s: model call timeout %s (policy %s) exceeds its %s %s", a.Name, dur(call), m.Name, what, dur(limit)),
				fmt.Sprintf("Lower the policy's timeout to %s or less, or raise %s.", dur(limit), what))
		}
		if a.Heartbeat > 0 && a.Queue.Visibility <= call {
			r.Add(queueField(f, a, "visibility"),
				fmt.Sprintf("class %s: visibility %s is not above its longest model call %s (policy %s); a heartbeat cannot land during the call",
					a.Name, dur(a.Queue.Visibility), dur(call), m.Name),
				fmt.Sprintf("Raise queue.visibility above %s, or lower the policy's timeout.", dur(call)))
		}
	}
}

func checkFallbackCaps(f *ir.Fleet, r *Reporter) {
	seen := map[*ir.Model]bool{}
	used := usedPolicies(f)
	for _, m := range f.Models {
		if !used[m] {
			continue
		}
		for _, fb := range chain(m)[1:] {
			if fb.MaxInFlight > 0 || seen[fb] {
				continue
			}
			seen[fb] = true
			r.Add(fb.Path,
				fmt.Sprintf("fallback policy %s (from %s) has no max_in_flight: a primary outage lands on it uncapped", fb.Name, m.Name),
				"Set max_in_flight on the fallback policy, sized from its tokens_per_minute.")
		}
	}
}

func checkSpendLimitRetries(f *ir.Fleet, r *Reporter) {
	for _, m := range f.Models {
		if m.SDKRetries > 0 {
			r.Add(m.Path+"/sdk_retries",
				fmt.Sprintf("model policy %s lets the SDK retry %d times; SDKs retry spend-limit 429s (no retry-after) that fail until access resumes", m.Name, m.SDKRetries),
				"Set sdk_retries: 0; fleet-worker dead-letters spend-limit 429s (SpendLimit) for a human.")
		}
	}
}
