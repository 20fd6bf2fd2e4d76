// Package hcltest reads HCL for tests: an independent parser (the HCL library's) as the
// oracle of what fleetc writes. Product code never parses the HCL it generated back; tests
// check through this package that what it wrote says what it meant.
package hcltest

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Body is a block's (or a file's) content.
type Body struct {
	// Attrs are the attributes by name, each the value of its expression when the expression
	// is a constant (cty.DynamicVal otherwise: it refers to something).
	Attrs  map[string]cty.Value
	Blocks []*Block
}

// Block is a nested block.
type Block struct {
	Type   string
	Labels []string
	Body   *Body
}

// Has reports whether the body has a nested block of type typ.
func (b *Body) Has(typ string) bool { return b.Block(typ) != nil }

// Block returns the first nested block of type typ, nil when there is none.
func (b *Body) Block(typ string) *Block {
	for _, nb := range b.Blocks {
		if nb.Type == typ {
			return nb
		}
	}
	return nil
}

// Parse reads src (named name in errors); the test fails when it is not valid HCL.
func Parse(tb testing.TB, name string, src []byte) *Body {
	tb.Helper()
	f, ds := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if ds.HasErrors() {
		tb.Fatalf("%s does not parse: %v\n%s", name, ds, src)
	}
	return body(f.Body.(*hclsyntax.Body))
}

func body(b *hclsyntax.Body) *Body {
	out := &Body{Attrs: map[string]cty.Value{}}
	for name, a := range b.Attributes {
		v, ds := a.Expr.Value(nil)
		if ds.HasErrors() {
			v = cty.DynamicVal
		}
		out.Attrs[name] = v
	}
	for _, nb := range b.Blocks {
		out.Blocks = append(out.Blocks, &Block{Type: nb.Type, Labels: nb.Labels, Body: body(nb.Body)})
	}
	return out
}
