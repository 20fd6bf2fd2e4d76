package review

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/fleetc/fleetc/compiler/artifact"
)

// resource is one resource or data block of the generated Terraform, flattened: every
// attribute, nested blocks included, keyed by its path ("retry_policy.0.maximum_retry_attempts").
type resource struct {
	Address string // aws_sqs_queue.coder, data.aws_iam_policy_document.coder
	Type    string
	Data    bool
	File    string
	Attrs   map[string]string   // path → expression source, as generated (formatting is canonical)
	Refs    map[string][]string // path → referenced "address.attribute" traversals
	// Inputs maps an argument to the generated files it reads with file() or templatefile()
	// (runtime configs, schemas, state machine definitions), as output-root paths
	// ("runtime/coder.json"): their bytes are part of the argument's value.
	Inputs map[string][]string
}

// parseTerraform reads every generated .tf file of a set into resources keyed by address.
func parseTerraform(set *artifact.Set) (map[string]*resource, error) {
	out := map[string]*resource{}
	for _, p := range set.Paths() {
		if !strings.HasPrefix(p, "terraform/") || !strings.HasSuffix(p, ".tf") {
			continue
		}
		src, _ := set.Get(p)
		f, ds := hclsyntax.ParseConfig(src, p, hcl.InitialPos)
		if ds.HasErrors() {
			return nil, fmt.Errorf("review: generated %s does not parse: %s", p, ds.Error())
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			if (b.Type != "resource" && b.Type != "data") || len(b.Labels) != 2 {
				continue
			}
			r := &resource{Type: b.Labels[0], Data: b.Type == "data", File: p, Attrs: map[string]string{}, Refs: map[string][]string{}, Inputs: map[string][]string{}}
			r.Address = b.Labels[0] + "." + b.Labels[1]
			if r.Data {
				r.Address = "data." + r.Address
			}
			flatten(r, src, "", b.Body)
			out[r.Address] = r
		}
	}
	return out, nil
}

// flatten records a body's attributes and nested blocks under prefix. Repeated blocks are
// numbered in order, as Terraform lists them.
func flatten(r *resource, src []byte, prefix string, body *hclsyntax.Body) {
	for name, a := range body.Attributes {
		path := prefix + name
		rng := a.Expr.Range()
		r.Attrs[path] = string(rng.SliceBytes(src))
		for _, t := range a.Expr.Variables() {
			if ref := traversalRef(t); ref != "" {
				r.Refs[path] = append(r.Refs[path], ref)
			}
		}
		sort.Strings(r.Refs[path])
		if in := fileInputs(a.Expr); len(in) > 0 {
			r.Inputs[path] = in
		}
	}
	counts := map[string]int{}
	for _, b := range body.Blocks {
		i := counts[b.Type]
		counts[b.Type]++
		flatten(r, src, fmt.Sprintf("%s%s.%d.", prefix, b.Type, i), b.Body)
	}
}

// traversalRef renders a reference to another block as "address.attribute"
// (aws_sqs_queue.coder.arn, data.aws_iam_policy_document.x.json); "" for variables, locals
// and other roots that are not blocks.
func traversalRef(t hcl.Traversal) string {
	var parts []string
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			parts = append(parts, s.Name)
		case hcl.TraverseAttr:
			parts = append(parts, s.Name)
		}
	}
	switch {
	case len(parts) >= 4 && parts[0] == "data":
		return strings.Join(parts[:4], ".")
	case len(parts) >= 3 && strings.HasPrefix(parts[0], "aws_"):
		return strings.Join(parts[:3], ".")
	}
	return ""
}

// splitRef splits "aws_sqs_queue.coder.arn" into the block address and the attribute.
func splitRef(ref string) (address, attr string) {
	i := strings.LastIndexByte(ref, '.')
	return ref[:i], ref[i+1:]
}

// fileFuncs are the Terraform functions whose value changes with the bytes of the file they name.
var fileFuncs = []string{"file", "templatefile", "filesha256"}

// fileInputs lists the files an expression reads through file("${path.module}/../<p>"),
// templatefile(...) or filesha256(...) (a config object's content-addressed key), as
// output-root paths, sorted.
func fileInputs(e hclsyntax.Expression) []string {
	var out []string
	_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || !slices.Contains(fileFuncs, call.Name) || len(call.Args) == 0 {
			return nil
		}
		tmpl, ok := call.Args[0].(*hclsyntax.TemplateExpr)
		if !ok || len(tmpl.Parts) != 2 {
			return nil
		}
		root, ok := tmpl.Parts[0].(*hclsyntax.ScopeTraversalExpr)
		lit, ok2 := tmpl.Parts[1].(*hclsyntax.LiteralValueExpr)
		if !ok || !ok2 || len(root.Traversal) != 2 || root.Traversal.RootName() != "path" || !lit.Val.Type().Equals(cty.String) {
			return nil
		}
		if rel, ok := strings.CutPrefix(lit.Val.AsString(), "/../"); ok {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}
