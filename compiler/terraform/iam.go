package terraform

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/ir"
)

// stmt is one statement of an aws_iam_policy_document.
type stmt struct {
	sid        string
	deny       bool     // effect Deny (default Allow)
	actions    []string // sorted on output
	resources  []tokens
	principal  *principal
	conditions []condition
}

type principal struct {
	typ  string
	ids  []string
	refs []tokens // identifiers that are expressions (an account's root ARN)
}

type condition struct {
	test, variable string
	values         []tokens
}

// TfsecWildcards is tfsec's check for wildcards in IAM statements.
const TfsecWildcards = "aws-iam-no-policy-wildcards"

// wildcardWhy says, per statement sid, why an Allow statement's resources hold a wildcard.
// policyDoc writes the reason beside the statement as the tfsec:ignore that accepts it, so
// the explanation is where the reader of the Terraform (and tfsec in CI) meets the wildcard.
var wildcardWhy = map[string]string{
	"AuthenticateToECR":           "ecr:GetAuthorizationToken has no resource-level permissions: AWS accepts only \"*\".",
	"DistributedMapChildren":      "Distributed Map child executions are named at run time: only <machine>/* and execution:<machine>/* can name them.",
	"FanOutResultWriter":          "ResultWriter exports are objects Step Functions names at run time, under this workflow's fanout/<workflow>/ prefix only.",
	"InvokeModelsThroughProfiles": "A cross-region inference profile routes to its foundation model in any region it spans (global ones in any region): bedrock:*::foundation-model/<model>, that model only, and only through this fleet's profiles (bedrock:InferenceProfileArn).",
	"KeyAdministration":           "A key policy's resource is always \"*\", the key itself; kms:* for this account leaves the key's use to IAM (the roles' UseFleetKeyVia<service> grants).",
	"CloudWatchLogs":              "A key policy's resource is always \"*\", the key itself; CloudWatch Logs may use it only for this account's log groups in the region (encryption context).",
	"EventBridgeToQueues":         "A key policy's resource is always \"*\", the key itself; EventBridge may use it only for this account's rules, to deliver into the encrypted queues.",
	"InvokeTools":                 "<function>:* names the function's versions and aliases, which a caller may invoke by qualified ARN; no other function.",
	"LogDelivery":                 "Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only \"*\".",
	"ReadGateAlarms":              "CodeDeploy reads its deployment group's alarms with cloudwatch:DescribeAlarms, which AWS's own AWSCodeDeployRoleForLambda grants on \"*\"; it reads alarm states only.",
	"ReadOwnConfig":               "A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.",
	"ReadClaimCheckPayloads":      "Payloads are objects named per message under the prefixes this class may read (inputs/ of the event it consumes and of its workflows, its producers' outputs/, its workflows' fanout/); fleet-worker refuses any other key (claim_check.read_prefixes).",
	"TaskTokenCallbacks":          "Task tokens belong to executions created at run time: <machine>/* names the executions of these machines only.",
	"WriteFunctionLogs":           "Log streams are created at run time inside this function's own log group (<group>:*).",
	"WriteOwnClaimCheckOutputs":   "Outputs are objects named per message under this class's own outputs/<class>/ prefix.",
	"WriteRuntimeLogs":            "AgentCore names each runtime's log group at run time, under /aws/bedrock-agentcore/runtimes/ only.",
}

// wildcard reports whether an Allow statement names a resource or action with a wildcard.
func (s stmt) wildcard() bool {
	if s.deny {
		return false
	}
	for _, r := range s.resources {
		if text, _ := inline(r); strings.Contains(text, "*") {
			return true
		}
	}
	return slices.ContainsFunc(s.actions, func(a string) bool { return strings.Contains(a, "*") })
}

// tfsecIgnore is the inline comment that accepts check for the block or line below it, with its reason.
func tfsecIgnore(check, why string) string { return "tfsec:ignore:" + check + " " + why }

// policyDoc emits data "aws_iam_policy_document" name and returns its .json expression.
func (g *gen) policyDoc(fl *file, name, path string, stmts []stmt, comments ...string) tokens {
	g.claim("data.aws_iam_policy_document", name, path)
	d := fl.data("aws_iam_policy_document", name, comments...)
	for _, s := range stmts {
		if s.wildcard() {
			why, ok := wildcardWhy[s.sid]
			if !ok {
				why = "NO REASON GIVEN: add statement " + s.sid + " to terraform.wildcardWhy"
			}
			d.comment(tfsecIgnore(TfsecWildcards, why))
		}
		st := d.nested("statement")
		if s.sid != "" {
			st.set("sid", str(s.sid))
		}
		effect := "Allow"
		if s.deny {
			effect = "Deny"
		}
		st.set("effect", str(effect))
		st.set("actions", strs(sortedStrings(s.actions)...))
		if len(s.resources) > 0 {
			st.set("resources", list(s.resources...))
		}
		if s.principal != nil {
			p := st.nested("principals")
			p.set("type", str(s.principal.typ))
			ids := make([]tokens, 0, len(s.principal.ids)+len(s.principal.refs))
			for _, id := range s.principal.ids {
				ids = append(ids, str(id))
			}
			p.set("identifiers", list(append(ids, s.principal.refs...)...))
		}
		for _, c := range s.conditions {
			cb := st.nested("condition")
			cb.set("test", str(c.test))
			cb.set("variable", str(c.variable))
			cb.set("values", list(c.values...))
		}
	}
	return ref("data", "aws_iam_policy_document", name, "json")
}

// serviceTrust is a trust policy letting an AWS service assume the role. sourceAccount adds
// the confused-deputy guard aws:SourceAccount = this account; sourceArns, aws:SourceArn
// (ArnLike), the resources on whose behalf the service may assume it.
func serviceTrust(service string, sourceAccount bool, sourceArns []tokens, actions ...string) []stmt {
	s := stmt{sid: "AssumeRole", actions: actions, principal: &principal{typ: "Service", ids: []string{service}}}
	if sourceAccount {
		s.conditions = append(s.conditions, condition{"StringEquals", "aws:SourceAccount", []tokens{accountID()}})
	}
	if len(sourceArns) > 0 {
		s.conditions = append(s.conditions, condition{"ArnLike", "aws:SourceArn", sourceArns})
	}
	return []stmt{s}
}

// serviceARN is arn:<partition>:<service>:<fleet region>:<account>:<resource>, spelled out
// from names: a trust policy cannot reference the resource that uses its role (a cycle).
func (g *gen) serviceARN(service, resource string) tokens {
	return tmpl(lit("arn:"), interp(partition()), lit(":"+service+":"+g.f.Region+":"), interp(accountID()), lit(":"+resource))
}

// role emits an IAM role with a trust document and one inline policy, and returns the role.
func (g *gen) role(fl *file, name, roleName, path string, trust []stmt, policy []stmt, comments ...string) block {
	policy = g.keyGrant(policy)
	trustJSON := g.policyDoc(fl, name+"_trust", path, trust)
	policyJSON := g.policyDoc(fl, name, path, policy)
	g.claim("aws_iam_role", name, path)
	r := fl.resource("aws_iam_role", name, comments...)
	r.set("name", str(roleName))
	r.set("assume_role_policy", trustJSON)
	g.claim("aws_iam_role_policy", name, path)
	p := fl.resource("aws_iam_role_policy", name)
	p.set("name", str(roleName))
	p.set("role", ref("aws_iam_role", name, "id"))
	p.set("policy", policyJSON)
	return r
}

// Geographic prefixes of cross-region inference profile ids (us.anthropic...).
var profilePrefixes = []string{"us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global."}

// modelGrants are the Bedrock ARNs a class may invoke, in two statements.
type modelGrants struct {
	// direct: foundation models in the fleet's region, inference profiles in the fleet's
	// region, and ARNs the spec names.
	direct []tokens
	// routed: the foundation model of each inference profile in whatever region the profile
	// routes to (geographic profiles span their geography, global ones every commercial
	// region and no region at all; IAM's * matches empty), allowed only through profiles
	// (bedrock:InferenceProfileArn, as AWS documents): no direct call outside the region.
	routed, profiles []tokens
}

// modelResources returns the Bedrock ARNs a class may invoke: every target of its policy and
// of every policy reachable through fallbacks. Targets of other providers (openai/...,
// anthropic/...) need no AWS permission.
func (g *gen) modelResources(ms ...*ir.Model) modelGrants {
	seen := map[*ir.Model]bool{}
	var targets []string
	var walk func(m *ir.Model)
	walk = func(m *ir.Model) {
		if m == nil || seen[m] {
			return
		}
		seen[m] = true
		targets = append(targets, m.Targets...)
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

	direct, routed, profiles := map[string]tokens{}, map[string]tokens{}, map[string]tokens{}
	for _, target := range targets {
		id, ok := strings.CutPrefix(target, "bedrock/")
		if !ok || id == "" {
			continue
		}
		switch {
		case strings.HasPrefix(id, "arn:"):
			direct[id] = str(id)
		case hasPrefixAny(id, profilePrefixes...):
			base := id[strings.Index(id, ".")+1:]
			profile := tmpl(lit("arn:"), interp(partition()), lit(":bedrock:"+g.f.Region+":"), interp(accountID()), lit(":inference-profile/"+id))
			direct["profile/"+id], profiles[id] = profile, profile
			routed[base] = tmpl(lit("arn:"), interp(partition()), lit(":bedrock:*::foundation-model/"+base))
		default:
			direct["model/"+id] = tmpl(lit("arn:"), interp(partition()), lit(":bedrock:"+g.f.Region+"::foundation-model/"+id))
		}
	}
	sorted := func(m map[string]tokens) []tokens {
		var out []tokens
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, m[k])
		}
		return out
	}
	return modelGrants{direct: sorted(direct), routed: sorted(routed), profiles: sorted(profiles)}
}

// ecrRE matches a private ECR image: <account>.dkr.ecr.<region>.amazonaws.com[.cn]/<repo>[:tag|@digest].
var ecrRE = regexp.MustCompile(`^([0-9]{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?/([a-z0-9._/-]+?)(:[A-Za-z0-9._-]+|@sha256:[a-f0-9]{64})?$`)

// ecrRepository returns the repository ARN of an ECR image, or "" for other registries.
func ecrRepository(image string) string {
	m := ecrRE.FindStringSubmatch(image)
	if m == nil {
		return ""
	}
	return "arn:" + ir.Partition(m[2]) + ":ecr:" + m[2] + ":" + m[1] + ":repository/" + m[4]
}
