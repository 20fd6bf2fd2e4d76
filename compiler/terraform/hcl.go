package terraform

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/terraform/hclfmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// This file holds the small vocabulary the generator speaks: every expression is an
// hclwrite token stream built from typed pieces (values, traversals, calls), never a
// formatted string of HCL.

type tokens = hclwrite.Tokens

func str(s string) tokens   { return hclwrite.TokensForValue(cty.StringVal(s)) }
func num(n int64) tokens    { return hclwrite.TokensForValue(cty.NumberIntVal(n)) }
func boolean(b bool) tokens { return hclwrite.TokensForValue(cty.BoolVal(b)) }

// strs is a tuple of string literals.
func strs(ss ...string) tokens {
	items := make([]tokens, len(ss))
	for i, s := range ss {
		items[i] = str(s)
	}
	return hclfmt.Tuple(items)
}

func list(items ...tokens) tokens { return hclfmt.Tuple(items) }

// ref is a traversal such as aws_sqs_queue.researcher.arn, written "aws_sqs_queue", "researcher", "arn".
func ref(root string, attrs ...string) tokens {
	return hclwrite.TokensForTraversal(traversal(root, attrs...))
}

func traversal(root string, attrs ...string) hcl.Traversal {
	t := hcl.Traversal{hcl.TraverseRoot{Name: root}}
	for _, a := range attrs {
		t = append(t, hcl.TraverseAttr{Name: a})
	}
	return t
}

func call(name string, args ...tokens) tokens { return hclfmt.Call(name, args...) }

// kv is one attribute of an object constructor.
type kv struct {
	key string
	val tokens
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// object builds { key = value, ... } in the given order; keys that are not identifiers are quoted.
func object(attrs ...kv) tokens {
	items := make([]hclwrite.ObjectAttrTokens, len(attrs))
	for i, a := range attrs {
		name := str(a.key)
		if identRE.MatchString(a.key) {
			name = hclwrite.TokensForIdentifier(a.key)
		}
		items[i] = hclwrite.ObjectAttrTokens{Name: name, Value: a.val}
	}
	return hclfmt.Object(items)
}

// value turns a JSON-like Go value (maps, slices, strings, numbers, bools, nil) into an HCL
// expression, with map keys sorted.
func value(v any) (tokens, error) {
	switch x := v.(type) {
	case nil:
		return hclwrite.TokensForValue(cty.NullVal(cty.DynamicPseudoType)), nil
	case string:
		return str(x), nil
	case bool:
		return boolean(x), nil
	case int:
		return num(int64(x)), nil
	case int64:
		return num(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("number %v has no JSON form", x)
		}
		return hclwrite.TokensForValue(cty.NumberFloatVal(x)), nil
	case []any:
		items := make([]tokens, len(x))
		for i, e := range x {
			t, err := value(e)
			if err != nil {
				return nil, err
			}
			items[i] = t
		}
		return list(items...), nil
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		attrs := make([]kv, len(keys))
		for i, k := range keys {
			t, err := value(x[k])
			if err != nil {
				return nil, err
			}
			attrs[i] = kv{k, t}
		}
		return object(attrs...), nil
	default:
		return nil, fmt.Errorf("unsupported value type %T", v)
	}
}

// tpart is one piece of a quoted template: literal text, or an interpolated expression.
type tpart struct {
	lit  string
	expr tokens
}

// lit is literal template text (escaped by hclwrite); interp is a ${...} interpolation.
func lit(s string) tpart    { return tpart{lit: s} }
func interp(t tokens) tpart { return tpart{expr: t} }

// tmpl builds a quoted template string from its parts.
func tmpl(parts ...tpart) tokens {
	out := tokens{{Type: hclsyntax.TokenOQuote, Bytes: []byte(`"`)}}
	for _, p := range parts {
		if p.expr == nil {
			l := str(p.lit)
			out = append(out, l[1:len(l)-1]...) // drop hclwrite's own quotes, keep its escaping
			continue
		}
		out = append(out, &hclwrite.Token{Type: hclsyntax.TokenTemplateInterp, Bytes: []byte("${")})
		out = append(out, p.expr...)
		out = append(out, &hclwrite.Token{Type: hclsyntax.TokenTemplateSeqEnd, Bytes: []byte("}")})
	}
	return append(out, &hclwrite.Token{Type: hclsyntax.TokenCQuote, Bytes: []byte(`"`)})
}

// block is a thin builder over an hclwrite block body.
type block struct{ body *hclwrite.Body }

// set assigns an attribute. Formatting rewrites token spacing in place, so an expression's
// tokens must not be shared between attributes: build each one fresh (see accountID()).
func (b block) set(name string, t tokens) block { b.body.SetAttributeRaw(name, t); return b }

func (b block) nested(typ string, labels ...string) block {
	return block{b.body.AppendNewBlock(typ, labels).Body()}
}

// comment appends "# text" lines at the current position.
func (b block) comment(lines ...string) {
	for _, l := range lines {
		b.body.AppendUnstructuredTokens(tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# " + l + "\n")}})
	}
}

// file is one generated .tf file.
type file struct {
	name string
	f    *hclwrite.File
	n    int // top-level blocks so far
}

func newFile(name string) *file { return &file{name: name, f: hclwrite.NewEmptyFile()} }

func (f *file) root() block { return block{f.f.Body()} }

// top appends a top-level block, separated from the previous one by a blank line, with
// optional leading comment lines.
func (f *file) top(typ string, labels []string, comments ...string) block {
	body := f.f.Body()
	if f.n > 0 {
		body.AppendNewline()
	}
	f.n++
	block{body}.comment(comments...)
	return block{body.AppendNewBlock(typ, labels).Body()}
}

func (f *file) resource(typ, name string, comments ...string) block {
	return f.top("resource", []string{typ, name}, comments...)
}

func (f *file) data(typ, name string, comments ...string) block {
	return f.top("data", []string{typ, name}, comments...)
}

func (f *file) bytes() []byte { return hclfmt.Bytes(f.f) }

// local is a Terraform local name for a spec name: '-' becomes '_'.
func local(name string) string { return strings.ReplaceAll(name, "-", "_") }
