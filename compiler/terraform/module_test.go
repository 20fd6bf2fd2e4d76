package terraform

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
)

// The module the writer records is what an HCL parser reads in the files it wrote: the same
// resource, data and output blocks in file then source order, each attribute (nested blocks'
// included) with its source byte for byte, every traversal in it at its offsets, and every
// generated file it reads with file()/templatefile(). The parser is the oracle here only:
// fleetc diff and the emulator override read the recorded module instead of parsing.
func TestModuleMatchesFiles(t *testing.T) {
	fleets := map[string]*ir.Fleet{"kitchen-sink": lower(t, "../testdata/kitchen-sink/fleet.yaml")}
	for _, name := range examples {
		fleets[name] = example(t, name)
	}
	for name, f := range fleets {
		files, mod, ds := GenerateModule(f, configs(t, f))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		var want []artifact.Block
		for _, file := range files {
			if strings.HasSuffix(file.Path, ".tf") {
				want = append(want, parsedBlocks(t, file)...)
			}
		}
		if len(mod.Blocks) != len(want) {
			t.Errorf("%s: %d blocks recorded, %d in the files", name, len(mod.Blocks), len(want))
		}
		for i := range min(len(mod.Blocks), len(want)) {
			got, w := fmt.Sprintf("%+v", mod.Blocks[i]), fmt.Sprintf("%+v", want[i])
			if got != w {
				t.Errorf("%s: block %d:\nrecorded %s\nparsed   %s", name, i, got, w)
			}
		}
	}
}

// parsedBlocks reads a file's resource, data and output blocks as the module records them.
func parsedBlocks(t *testing.T, file artifact.File) []artifact.Block {
	t.Helper()
	f, ds := hclsyntax.ParseConfig(file.Bytes, file.Path, hcl.InitialPos)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var out []artifact.Block
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		var blk artifact.Block
		switch {
		case (b.Type == "resource" || b.Type == "data") && len(b.Labels) == 2:
			blk = artifact.Block{Kind: artifact.BlockKind(b.Type), Type: b.Labels[0], Name: b.Labels[1]}
		case b.Type == "output" && len(b.Labels) == 1:
			blk = artifact.Block{Kind: artifact.KindOutput, Name: b.Labels[0]}
		default:
			continue
		}
		blk.File = file.Path
		parsedAttrs(&blk, file.Bytes, "", b.Body)
		out = append(out, blk)
	}
	return out
}

// parsedAttrs appends a body's attributes and nested blocks' in source order.
func parsedAttrs(blk *artifact.Block, src []byte, prefix string, body *hclsyntax.Body) {
	type entry struct {
		at   int
		attr *hclsyntax.Attribute
		blk  *hclsyntax.Block
		path string
	}
	var es []entry
	for name, a := range body.Attributes {
		es = append(es, entry{at: a.SrcRange.Start.Byte, attr: a, path: prefix + name})
	}
	counts := map[string]int{}
	for _, b := range body.Blocks {
		es = append(es, entry{at: b.TypeRange.Start.Byte, blk: b, path: fmt.Sprintf("%s%s.%d.", prefix, b.Type, counts[b.Type])})
		counts[b.Type]++
	}
	slices.SortFunc(es, func(a, b entry) int { return a.at - b.at })
	for _, e := range es {
		if e.blk != nil {
			parsedAttrs(blk, src, e.path, e.blk.Body)
			continue
		}
		rng := e.attr.Expr.Range()
		a := artifact.Attr{Path: e.path, Src: string(rng.SliceBytes(src))}
		base := rng.Start.Byte
		for _, tr := range e.attr.Expr.Variables() {
			r := tr.SourceRange()
			a.Refs = append(a.Refs, artifact.Span{Text: string(r.SliceBytes(src)), Start: r.Start.Byte - base, End: r.End.Byte - base})
		}
		slices.SortFunc(a.Refs, func(x, y artifact.Span) int { return x.Start - y.Start })
		a.Inputs = parsedInputs(e.attr.Expr, src, base)
		blk.Attrs = append(blk.Attrs, a)
	}
}

// parsedInputs finds file("${path.module}/../F"), templatefile(...) and filesha256(...) calls.
func parsedInputs(e hclsyntax.Expression, src []byte, base int) []artifact.Input {
	var out []artifact.Input
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
		if !ok || !ok2 || root.Traversal.RootName() != "path" || !lit.Val.Type().Equals(cty.String) {
			return nil
		}
		if rel, ok := strings.CutPrefix(lit.Val.AsString(), "/../"); ok {
			r := lit.Range()
			out = append(out, artifact.Input{Func: call.Name, File: rel,
				Span: artifact.Span{Text: string(r.SliceBytes(src)), Start: r.Start.Byte - base, End: r.End.Byte - base}})
		}
		return nil
	})
	return out
}
