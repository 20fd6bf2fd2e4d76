package terraform

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/ir"
)

// This file grants a worker the reads of its model API keys (models.<policy>.api_key) and
// its exec handler's secrets (handler.secrets): the secret or parameter of every policy
// the class may call and of its own handler, and nothing else. Terraform holds
// the reference only; the value is read by fleet-worker at start (runtime/router/apikey), so
// it never enters the state, a plan or the function's environment.

// secretSuffix is what Secrets Manager appends to a secret's name in its ARN: a hyphen and
// six random characters. IAM names a secret by name with "-??????" (AWS: "Resource:
// secret names in IAM policies"), which matches that secret and no other secret whose
// name merely starts with it.
const secretSuffix = "-??????"

// modelKeyReads is the statements that let a class read the API keys of the policies it
// may call (its own, the allowed ones, and their fallbacks) and its exec handler's
// secrets (handler.secrets): GetSecretValue on each secret, GetParameter on each
// parameter, and Decrypt on the customer-managed keys they name, through those services
// only. None when neither names a key.
func (g *gen) modelKeyReads(a *ir.Agent) []stmt {
	var models []*ir.APIKey
	for _, m := range modelClosure(a.Models) {
		models = append(models, m.APIKey)
	}
	st := g.keyReads("ModelKey", models)
	// Separate statements: a reviewer sees which reads serve the handler's own code.
	return append(st, g.keyReads("HandlerSecret", slices.Collect(maps.Values(a.Handler.Secrets)))...)
}

// keyReads is the statements reading refs (nil entries skipped), their Sids prefixed by
// what the values are for.
func (g *gen) keyReads(what string, refs []*ir.APIKey) []stmt {
	secrets, params := map[string]tokens{}, map[string]tokens{}
	secretKeys, paramKeys := map[string]tokens{}, map[string]tokens{} // customer-managed keys, by service
	for _, k := range refs {
		switch {
		case k == nil:
		case k.Secret != "":
			secrets[k.Secret] = g.secretARN(k.Secret)
			addKey(secretKeys, k.KMSKey)
		case k.SSM != "":
			params[k.SSM] = g.parameterARN(k.SSM)
			addKey(paramKeys, k.KMSKey)
		}
	}
	var st []stmt
	if len(secrets) > 0 {
		st = append(st, stmt{sid: "Read" + what + "Secrets", actions: []string{"secretsmanager:GetSecretValue"}, resources: sortedTokens(secrets)})
	}
	if len(params) > 0 {
		st = append(st, stmt{sid: "Read" + what + "Parameters", actions: []string{"ssm:GetParameter"}, resources: sortedTokens(params)})
	}
	// Decrypt only as the service that holds the value asks for it (kms:ViaService): the
	// role cannot decrypt anything else encrypted under those keys.
	for _, d := range []struct {
		sid, service string
		keys         map[string]tokens
	}{{"Decrypt" + what + "Secrets", "secretsmanager", secretKeys}, {"Decrypt" + what + "Parameters", "ssm", paramKeys}} {
		if len(d.keys) > 0 {
			st = append(st, stmt{sid: d.sid, actions: []string{"kms:Decrypt"}, resources: sortedTokens(d.keys),
				conditions: []condition{viaService(d.service, g.f.Region)}})
		}
	}
	return st
}

// viaService is the condition that holds a kms grant to requests service makes on the
// role's behalf in region.
func viaService(service, region string) condition {
	return condition{"StringEquals", "kms:ViaService", []tokens{str(service + "." + region + ".amazonaws.com")}}
}

// addKey records a customer-managed key ("" = the service's AWS-managed key: no grant).
func addKey(keys map[string]tokens, arn string) {
	if arn != "" {
		keys[arn] = str(arn)
	}
}

// modelClosure is ms and every policy reachable from them through fallbacks, each once.
func modelClosure(ms []*ir.Model) []*ir.Model {
	seen := map[*ir.Model]bool{}
	var out []*ir.Model
	var walk func(m *ir.Model)
	walk = func(m *ir.Model) {
		if m == nil || seen[m] {
			return
		}
		seen[m] = true
		out = append(out, m)
		for _, fb := range m.Fallbacks {
			walk(fb)
		}
		for _, fb := range m.ContextWindowFallbacks {
			walk(fb)
		}
	}
	for _, m := range ms {
		walk(m)
	}
	return out
}

// completeSecretARN is a secret ARN that ends in the suffix Secrets Manager appends (AWS
// advises against names ending in a hyphen and six characters for this reason).
var completeSecretARN = regexp.MustCompile(`:secret:.+-[A-Za-z0-9]{6}$`)

// secretARN is the secret's ARN as given (a partial ARN, without the suffix, gets the
// suffix pattern: IAM matches the complete ARN), or, for a name, the ARN of that name in
// the fleet's region and account with the suffix pattern.
func (g *gen) secretARN(ref string) tokens {
	if strings.HasPrefix(ref, "arn:") {
		if !completeSecretARN.MatchString(ref) {
			ref += secretSuffix
		}
		return str(ref)
	}
	return tmpl(lit("arn:"), interp(partition()), lit(":secretsmanager:"+g.f.Region+":"), interp(accountID()), lit(":secret:"+ref+secretSuffix))
}

// parameterARN is the parameter's ARN as given, or, for a name, its ARN in the fleet's
// region and account: parameter/<name>, a leading "/" of the name not doubled.
func (g *gen) parameterARN(ref string) tokens {
	if strings.HasPrefix(ref, "arn:") {
		return str(ref)
	}
	return tmpl(lit("arn:"), interp(partition()), lit(":ssm:"+g.f.Region+":"), interp(accountID()), lit(":parameter/"+strings.TrimPrefix(ref, "/")))
}

// sortedTokens is m's values in key order (deterministic output).
func sortedTokens(m map[string]tokens) []tokens {
	out := make([]tokens, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
