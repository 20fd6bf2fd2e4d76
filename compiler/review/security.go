package review

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/compat"
)

// statement is one IAM policy statement as generated, its lists split into items.
type statement struct {
	doc, sid   string
	effect     string
	actions    []string
	resources  []string
	principals []string
	conditions map[string][]string // "test variable" → values
}

var listItem = regexp.MustCompile(`"[^"]*"|[A-Za-z_][\w.\[\]*"-]*`)

// items splits a generated list expression (["a", "b"], [aws_x.y.arn]) into its items.
func items(expr string) []string {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil
	}
	if !strings.HasPrefix(expr, "[") {
		return []string{expr}
	}
	return listItem.FindAllString(strings.Trim(expr, "[]"), -1)
}

// statements extracts every statement of every aws_iam_policy_document.
func statements(tf map[string]*resource) map[string]statement {
	out := map[string]statement{}
	for addr, r := range tf {
		if !r.Data || r.Type != "aws_iam_policy_document" {
			continue
		}
		for i := 0; ; i++ {
			p := fmt.Sprintf("statement.%d.", i)
			if !hasPrefix(r.Attrs, p) {
				break
			}
			st := statement{doc: addr, sid: strings.Trim(r.Attrs[p+"sid"], `"`), effect: strings.Trim(r.Attrs[p+"effect"], `"`)}
			st.actions = items(r.Attrs[p+"actions"])
			st.resources = items(r.Attrs[p+"resources"])
			for j := 0; hasPrefix(r.Attrs, fmt.Sprintf("%sprincipals.%d.", p, j)); j++ {
				q := fmt.Sprintf("%sprincipals.%d.", p, j)
				typ := strings.Trim(r.Attrs[q+"type"], `"`)
				for _, id := range items(r.Attrs[q+"identifiers"]) {
					st.principals = append(st.principals, typ+" "+id)
				}
			}
			st.conditions = map[string][]string{}
			for j := 0; hasPrefix(r.Attrs, fmt.Sprintf("%scondition.%d.", p, j)); j++ {
				q := fmt.Sprintf("%scondition.%d.", p, j)
				k := strings.Trim(r.Attrs[q+"test"], `"`) + " " + strings.Trim(r.Attrs[q+"variable"], `"`)
				st.conditions[k] = items(r.Attrs[q+"values"])
			}
			key := addr + "#" + st.sid
			if st.sid == "" {
				key = fmt.Sprintf("%s#%d", addr, i)
			}
			out[key] = st
		}
	}
	return out
}

// describe reads a statement as a sentence: effect, actions, then whom it trusts (a trust
// policy has principals and no resources), what it is on, and under which conditions.
func (st statement) describe() string {
	s := fmt.Sprintf("%s: %s %s", st.sid, st.effect, strings.Join(st.actions, ", "))
	if len(st.principals) > 0 {
		s += " by " + strings.Join(st.principals, ", ")
	}
	if len(st.resources) > 0 {
		s += " on " + strings.Join(st.resources, ", ")
	}
	for _, k := range slices.Sorted(maps.Keys(st.conditions)) {
		s += fmt.Sprintf(" when %s %s", k, strings.Join(st.conditions[k], ", "))
	}
	return s
}

func hasPrefix(m map[string]string, p string) bool {
	for k := range m {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// added lists what is in y and not in x.
func added(x, y []string) []string {
	in := map[string]bool{}
	for _, v := range x {
		in[v] = true
	}
	var out []string
	for _, v := range y {
		if !in[v] {
			out = append(out, v)
		}
	}
	return out
}

// encryption names the arguments that keep data private, per resource type.
var encryption = map[string][]string{
	"aws_sqs_queue":                                      {"sqs_managed_sse_enabled", "kms_master_key_id"},
	"aws_dynamodb_table":                                 {"server_side_encryption.0.enabled", "server_side_encryption.0.kms_key_arn"},
	"aws_s3_bucket_public_access_block":                  {"block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"},
	"aws_s3_bucket_server_side_encryption_configuration": {"rule.0.apply_server_side_encryption_by_default.0.sse_algorithm", "rule.0.apply_server_side_encryption_by_default.0.kms_master_key_id"},
}

// securityChanges reports IAM statements that grant more than before (computed from the
// generated policy documents, not guessed from YAML) and encryption or public-access changes.
func securityChanges(btf, htf map[string]*resource, base, head *Side) []Change {
	var out []Change
	bs, hs := statements(btf), statements(htf)
	for _, k := range slices.Sorted(maps.Keys(hs)) {
		h := hs[k]
		b, existed := bs[k]
		var grants []string
		if !existed {
			grants = append(grants, "new statement "+h.describe())
		} else {
			if a := added(b.actions, h.actions); len(a) > 0 {
				grants = append(grants, "actions added: "+strings.Join(a, ", "))
			}
			if a := added(b.resources, h.resources); len(a) > 0 {
				grants = append(grants, "resources added: "+strings.Join(a, ", "))
			}
			if a := added(b.principals, h.principals); len(a) > 0 {
				grants = append(grants, "principals added: "+strings.Join(a, ", "))
			}
			for _, k := range slices.Sorted(maps.Keys(b.conditions)) {
				hv, ok := h.conditions[k]
				if !ok {
					grants = append(grants, "condition removed: "+k)
				} else if a := added(b.conditions[k], hv); len(a) > 0 {
					grants = append(grants, fmt.Sprintf("condition %s now also allows %s", k, strings.Join(a, ", ")))
				}
			}
		}
		if len(grants) == 0 || h.effect == "Deny" {
			continue
		}
		subject, specPath, nodes := owner(htf[h.doc], head)
		c := Change{Category: Security, Severity: Warning, Subject: subject, Address: h.doc, Side: compat.Head, nodes: nodes,
			Summary: fmt.Sprintf("IAM widened in %s (%s)", h.doc, h.sid), Detail: strings.Join(grants, "; ")}
		locate(&c, head, specPath)
		out = append(out, c)
	}

	for _, addr := range slices.Sorted(maps.Keys(htf)) {
		h := htf[addr]
		b, ok := btf[addr]
		if !ok {
			continue
		}
		for _, attr := range encryption[h.Type] {
			if b.Attrs[attr] == h.Attrs[attr] {
				continue
			}
			subject, specPath, nodes := owner(h, head)
			c := Change{Category: Security, Severity: Warning, Subject: subject, Address: addr, Side: compat.Head, nodes: nodes,
				Summary: fmt.Sprintf("%s.%s: %s → %s", addr, attr, orNone(b.Attrs[attr]), orNone(h.Attrs[attr]))}
			locate(&c, head, specPath)
			out = append(out, c)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}
