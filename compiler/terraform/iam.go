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
	typ string
	ids []string
}

type condition struct {
	test, variable string
	values         []tokens
}

// policyDoc emits data "aws_iam_policy_document" name and returns its .json expression.
func (g *gen) policyDoc(fl *file, name, path string, stmts []stmt, comments ...string) tokens {
	g.claim("data.aws_iam_policy_document", name, path)
	d := fl.data("aws_iam_policy_document", name, comments...)
	for _, s := range stmts {
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
			p.set("identifiers", strs(s.principal.ids...))
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
	s := stmt{sid: "AssumeRole", actions: actions, principal: &principal{"Service", []string{service}}}
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

// modelResources returns the Bedrock ARNs a class may invoke: every target of its policy and
// of every policy reachable through fallbacks. An inference profile id becomes the profile
// ARN in the fleet region plus the foundation model it routes to in any region (profiles
// fan out across regions, and global ones have no region at all; IAM's * matches empty).
// Targets of other providers (openai/..., anthropic/...) need no AWS permission.
func (g *gen) modelResources(ms ...*ir.Model) []tokens {
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

	type arn struct {
		key string
		t   tokens
	}
	byKey := map[string]arn{}
	add := func(key string, t tokens) { byKey[key] = arn{key, t} }
	for _, target := range targets {
		id, ok := strings.CutPrefix(target, "bedrock/")
		if !ok || id == "" {
			continue
		}
		switch {
		case strings.HasPrefix(id, "arn:"):
			add(id, str(id))
		case hasPrefixAny(id, profilePrefixes...):
			base := id[strings.Index(id, ".")+1:]
			add("profile/"+id, tmpl(lit("arn:"), interp(partition()), lit(":bedrock:"+g.f.Region+":"), interp(accountID()), lit(":inference-profile/"+id)))
			add("model/*/"+base, tmpl(lit("arn:"), interp(partition()), lit(":bedrock:*::foundation-model/"+base)))
		default:
			add("model/"+g.f.Region+"/"+id, tmpl(lit("arn:"), interp(partition()), lit(":bedrock:"+g.f.Region+"::foundation-model/"+id)))
		}
	}
	keys := slices.Sorted(maps.Keys(byKey))
	out := make([]tokens, len(keys))
	for i, k := range keys {
		out[i] = byKey[k].t
	}
	return out
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
