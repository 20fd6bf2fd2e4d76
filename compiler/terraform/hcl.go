package terraform

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/zclconf/go-cty/cty"
)

// This file holds the small vocabulary the generator speaks (values, traversals, calls,
// tuples, objects, templates, blocks) and the writer that lays it out. Literals are escaped
// by hclwrite; the layout is our own: the generator knows every block and attribute it
// writes, so the writer emits canonical HCL (the layout `terraform fmt` produces) directly
// instead of building a token stream and running a general formatter over it. hcl_test.go
// holds it to that layout: the library's hclwrite.Format leaves every generated file
// unchanged (and the consumers test runs terraform fmt -check on the examples' output).

// tokens is one HCL expression (nil: none). The generator code calls it tokens, from when
// expressions were hclwrite token lists.
type tokens = *expr

// expr is an expression. Everything that fits on one line is kept as its source text (a
// leaf); only an expression containing a non-empty object spans lines, and keeps its
// structure so the writer can indent it where it lands.
type expr struct {
	kind  exprKind
	text  string   // a leaf's source, or a call's function name
	items []tokens // tuple elements or call arguments
	attrs []kv     // object attributes, keys already in source form
	spans []span   // a leaf's traversals and file paths, by offset in text
}

// span marks a piece of a leaf's source the module records (artifact.Module): a traversal,
// or the literal path of a generated file an expression reads.
type span struct {
	kind       spanKind
	text       string // a traversal's source; the file read, relative to the output root
	fn         string // inputSpan: the function that reads it
	start, end int
}

type spanKind uint8

const (
	refSpan   spanKind = iota // a traversal: aws_sqs_queue.coder.arn, path.module
	pathSpan                  // the literal "/../<file>" of "${path.module}/../<file>"
	inputSpan                 // a pathSpan read by file() or templatefile()
)

// shifted is spans moved by n bytes.
func shifted(spans []span, n int) []span {
	out := make([]span, len(spans))
	for i, sp := range spans {
		sp.start += n
		sp.end += n
		out[i] = sp
	}
	return out
}

// leafText builds a leaf's source from literal text and single-line expressions, keeping
// their spans.
type leafText struct {
	b     strings.Builder
	spans []span
}

func (l *leafText) str(s string) { l.b.WriteString(s) }

func (l *leafText) expr(e tokens) {
	text, spans := inline(e)
	l.spans = append(l.spans, shifted(spans, l.b.Len())...)
	l.b.WriteString(text)
}

func (l *leafText) leaf() tokens { return &expr{text: l.b.String(), spans: l.spans} }

type exprKind uint8

const (
	leafExpr exprKind = iota
	tupleExpr
	callExpr
	objectExpr
)

func leaf(s string) tokens { return &expr{text: s} }

func (e *expr) multiline() bool { return e.kind != leafExpr }

// source is the HCL source of a literal value, as hclwrite writes (and escapes) it.
func source(v cty.Value) string {
	var b strings.Builder
	for _, t := range hclwrite.TokensForValue(v) {
		b.Write(t.Bytes)
	}
	return b.String()
}

func str(s string) tokens   { return leaf(source(cty.StringVal(s))) }
func num(n int64) tokens    { return leaf(strconv.FormatInt(n, 10)) }
func boolean(b bool) tokens { return leaf(strconv.FormatBool(b)) }

// strs is a tuple of string literals.
func strs(ss ...string) tokens {
	items := make([]tokens, len(ss))
	for i, s := range ss {
		items[i] = str(s)
	}
	return list(items...)
}

// list is a tuple constructor [a, b, ...].
func list(items ...tokens) tokens { return sequence(tupleExpr, "", items) }

// fileFuncs are the Terraform functions whose value changes with the bytes of the file they
// name (filesha256: a config object's content-addressed key).
var fileFuncs = []string{"file", "templatefile", "filesha256"}

// call is a function call name(a, b, ...).
// A fileFuncs call whose path is pathModule("../<file>") reads a generated file: the module
// records it as the expression's input.
func call(name string, args ...tokens) tokens {
	if slices.Contains(fileFuncs, name) && len(args) > 0 {
		args = append([]tokens{readBy(name, args[0])}, args[1:]...)
	}
	return sequence(callExpr, name, args)
}

// readBy is e with its path literal marked as read by function fn.
func readBy(fn string, e tokens) tokens {
	c := *e
	c.spans = slices.Clone(e.spans)
	for i, sp := range c.spans {
		if sp.kind == pathSpan {
			c.spans[i].kind, c.spans[i].fn = inputSpan, fn
		}
	}
	return &c
}

// sequence builds a tuple or call; one whose items are all single-line is a leaf.
func sequence(kind exprKind, name string, items []tokens) tokens {
	if slices.ContainsFunc(items, (*expr).multiline) {
		return &expr{kind: kind, text: name, items: items}
	}
	var b leafText
	open, close := "[", "]"
	if kind == callExpr {
		b.str(name)
		open, close = "(", ")"
	}
	b.str(open)
	for i, it := range items {
		if i > 0 {
			b.str(", ")
		}
		b.expr(it)
	}
	b.str(close)
	return b.leaf()
}

// ref is a traversal such as aws_sqs_queue.researcher.arn, written "aws_sqs_queue", "researcher", "arn".
func ref(root string, attrs ...string) tokens {
	text := strings.Join(append([]string{root}, attrs...), ".")
	return &expr{text: text, spans: []span{{kind: refSpan, text: text, end: len(text)}}}
}

// equal is the comparison a == b of two single-line expressions.
func equal(a, b tokens) tokens {
	var l leafText
	l.expr(a)
	l.str(" == ")
	l.expr(b)
	return l.leaf()
}

// kv is one attribute of an object constructor.
type kv struct {
	key string
	val tokens
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// object builds { key = value, ... } in the given order; keys that are not identifiers are quoted.
func object(attrs ...kv) tokens {
	if len(attrs) == 0 {
		return leaf("{}")
	}
	items := make([]kv, len(attrs))
	for i, a := range attrs {
		name := a.key
		if !identRE.MatchString(name) {
			name = str(name).text
		}
		items[i] = kv{name, a.val}
	}
	return &expr{kind: objectExpr, attrs: items}
}

// value turns a JSON-like Go value (maps, slices, strings, numbers, bools, nil) into an HCL
// expression, with map keys sorted.
func value(v any) (tokens, error) { return valueWith(v, nil) }

// valueWith is value where a string equal to a key of refs becomes that expression (a
// Terraform reference inside a jsonencode'd document, e.g. a state machine's ARN).
func valueWith(v any, refs map[string]tokens) (tokens, error) {
	switch x := v.(type) {
	case nil:
		return leaf("null"), nil
	case string:
		if r, ok := refs[x]; ok {
			return r, nil
		}
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
		return leaf(source(cty.NumberFloatVal(x))), nil
	case []any:
		items := make([]tokens, len(x))
		for i, e := range x {
			t, err := valueWith(e, refs)
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
			t, err := valueWith(x[k], refs)
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
	expr tokens // nil for literal text
}

// lit is literal template text (escaped by hclwrite); interp is a ${...} interpolation.
func lit(s string) tpart    { return tpart{lit: s} }
func interp(t tokens) tpart { return tpart{expr: t} }

// tmpl builds a quoted template string from its parts.
func tmpl(parts ...tpart) tokens {
	var b leafText
	b.str(`"`)
	for _, p := range parts {
		if p.expr == nil {
			q := str(p.lit).text
			b.str(q[1 : len(q)-1]) // hclwrite's escaping without its quotes
			continue
		}
		b.str("${")
		b.expr(p.expr)
		b.str("}")
	}
	b.str(`"`)
	return b.leaf()
}

// body is the content of a file or block, in order.
type body struct{ items []item }

// item is one line (or construct) of a body: an attribute, a nested block, a comment line,
// or a blank line (all fields empty).
type item struct {
	name    string // attribute name
	val     tokens
	block   *blockNode
	comment string
}

type blockNode struct {
	typ    string
	labels []string
	body   body
}

// block is the generator's handle on one block's body.
type block struct{ body *body }

// set assigns an attribute, replacing an earlier one of the same name in place.
func (b block) set(name string, t tokens) block {
	for i := range b.body.items {
		if it := &b.body.items[i]; it.block == nil && it.name == name {
			it.val = t
			return b
		}
	}
	b.body.items = append(b.body.items, item{name: name, val: t})
	return b
}

func (b block) nested(typ string, labels ...string) block {
	n := &blockNode{typ: typ, labels: labels}
	b.body.items = append(b.body.items, item{block: n})
	return block{&n.body}
}

// comment appends "# text" lines at the current position.
func (b block) comment(lines ...string) {
	for _, l := range lines {
		b.body.items = append(b.body.items, item{comment: "# " + l})
	}
}

// file is one generated .tf file.
type file struct {
	name string
	body body
	n    int // top-level blocks so far
	// part and path own the blocks written next (a file per class; a file of workflows sets
	// them per workflow); blocks records each resource and data block for the inventory.
	part, path string
	elem       artifact.Element
	blocks     []artifact.Resource
}

func newFile(name string) *file { return &file{name: name} }

func (f *file) root() block { return block{&f.body} }

// top appends a top-level block, separated from the previous one by a blank line, with
// optional leading comment lines.
func (f *file) top(typ string, labels []string, comments ...string) block {
	if f.n > 0 {
		f.body.items = append(f.body.items, item{})
	}
	f.n++
	f.root().comment(comments...)
	return f.root().nested(typ, labels...)
}

func (f *file) resource(typ, name string, comments ...string) block {
	f.record(typ+"."+name, typ)
	return f.top("resource", []string{typ, name}, comments...)
}

func (f *file) data(typ, name string, comments ...string) block {
	f.record("data."+typ+"."+name, typ)
	return f.top("data", []string{typ, name}, comments...)
}

func (f *file) record(addr, typ string) {
	f.blocks = append(f.blocks, artifact.Resource{Address: addr, Type: typ, Part: f.part, Element: f.elem, Path: f.path, File: Dir + "/" + f.name})
}

// owner sets the spec part that owns the blocks written next.
func (f *file) owner(part, path string) *file {
	f.part, f.path, f.elem = part, path, ""
	return f
}

// element sets the part of the owner the blocks written next belong to ("" for the owner
// itself): the inventory's Element, which the topology draws from.
func (f *file) element(e artifact.Element) *file {
	f.elem = e
	return f
}

// bytes renders the file, and the module's record of its resource, data and output blocks.
func (f *file) bytes() ([]byte, []artifact.Block) {
	var w writer
	w.body(f.body.items, nil, "")
	return w.out, w.module(Dir + "/" + f.name)
}

// local is a Terraform local name for a spec name: '-' becomes '_'.
func local(name string) string { return strings.ReplaceAll(name, "-", "_") }

// writer lays out HCL in canonical form:
//   - each line is indented two spaces per open indentation step. A line that opens more
//     brackets than it closes starts a step (however many brackets it opened); a line that
//     closes more than it opens is indented after the steps it closes are popped, where
//     closing part of a step shortens it. So `x = [{` indents its contents once, and a
//     `}, {` between two objects in a tuple keeps that indentation;
//   - in a run of consecutive single-line attributes, the `=` signs line up one column after
//     the longest name (a block, comment, blank line or multi-line attribute ends the run);
//   - one space after commas and around `=`, none inside brackets, `{}` for an empty object.
//
// Lines are collected without indentation and written once complete, when their bracket
// balance is known.
type writer struct {
	out   []byte
	line  []byte
	net   int   // brackets opened minus closed on the current line
	steps []int // open indentation steps, each the number of brackets still open in it

	// What the module records, by offset in out: offsets are known once a line is written
	// (its indentation comes first), so marks on the current line wait in pending.
	pending []mark
	spans   []*span
	blocks  []*blockRec
}

// mark is an offset on the current line, to be stored in *dst once the line is written.
type mark struct {
	col int
	dst *int
}

// blockRec is a top-level block being written, with its attributes' offsets in out.
type blockRec struct {
	kind      artifact.BlockKind
	typ, name string
	attrs     []*attrRec
}

type attrRec struct {
	path       string
	start, end int
}

func (w *writer) mark(dst *int) { w.pending = append(w.pending, mark{len(w.line), dst}) }

// resolve stores the pending marks, the current line starting at offset base.
func (w *writer) resolve(base int) {
	for _, m := range w.pending {
		*m.dst = base + m.col
	}
	w.pending = w.pending[:0]
}

// leaf writes a leaf and records its spans.
func (w *writer) leaf(e tokens) {
	for _, sp := range e.spans {
		c := sp // start and end become offsets in out when the line is written
		w.pending = append(w.pending, mark{len(w.line) + sp.start, &c.start}, mark{len(w.line) + sp.end, &c.end})
		w.spans = append(w.spans, &c)
	}
	w.text(e.text)
}

// module is the record of the blocks written: each attribute's source and the spans in it.
func (w *writer) module(file string) []artifact.Block {
	var out []artifact.Block
	for _, br := range w.blocks {
		b := artifact.Block{Kind: br.kind, Type: br.typ, Name: br.name, File: file}
		for _, ar := range br.attrs {
			a := artifact.Attr{Path: ar.path, Src: string(w.out[ar.start:ar.end])}
			for _, sp := range w.spans {
				if sp.start < ar.start || sp.end > ar.end {
					continue
				}
				at := artifact.Span{Text: string(w.out[sp.start:sp.end]), Start: sp.start - ar.start, End: sp.end - ar.start}
				switch sp.kind {
				case refSpan:
					a.Refs = append(a.Refs, at)
				case inputSpan:
					a.Inputs = append(a.Inputs, artifact.Input{Func: sp.fn, File: sp.text, Span: at})
				}
			}
			b.Attrs = append(b.Attrs, a)
		}
		out = append(out, b)
	}
	return out
}

func (w *writer) text(s string) { w.line = append(w.line, s...) }

func (w *writer) open(s string)  { w.text(s); w.net++ }
func (w *writer) close(s string) { w.text(s); w.net-- }

// newline ends the current line.
func (w *writer) newline() {
	if len(w.line) > 0 {
		if w.net < 0 {
			w.closeSteps(-w.net)
		}
		for range len(w.steps) {
			w.out = append(w.out, ' ', ' ')
		}
		if w.net > 0 {
			w.steps = append(w.steps, w.net)
		}
		w.resolve(len(w.out))
		w.out = append(w.out, w.line...)
	}
	w.out = append(w.out, '\n')
	w.line, w.net = w.line[:0], 0
}

// closeSteps pops the indentation steps that n closing brackets end.
func (w *writer) closeSteps(n int) {
	for n > 0 && len(w.steps) > 0 {
		top := &w.steps[len(w.steps)-1]
		if n < *top {
			*top -= n
			return
		}
		n -= *top
		w.steps = w.steps[:len(w.steps)-1]
	}
}

// body writes a file's or block's items, aligning each run of single-line attributes. The
// attributes are recorded in rec (nil: not recorded) under prefix; rec is nil in the file
// body, where a resource, data or output block starts a record.
func (w *writer) body(items []item, rec *blockRec, prefix string) {
	counts := map[string]int{}
	for i := 0; i < len(items); {
		if j := singleLineRun(items, i); j > i {
			w.attributes(items[i:j], rec, prefix)
			i = j
			continue
		}
		it := items[i]
		switch {
		case it.block != nil && rec != nil:
			n := counts[it.block.typ]
			counts[it.block.typ]++
			w.block(it.block, rec, fmt.Sprintf("%s%s.%d.", prefix, it.block.typ, n))
		case it.block != nil:
			w.block(it.block, w.record(it.block), "")
		case it.comment != "":
			w.text(it.comment)
			w.newline()
		case it.name != "":
			w.text(it.name + " = ")
			w.value(it.val, rec, prefix+it.name)
			w.newline()
		default:
			w.newline()
		}
		i++
	}
}

// record starts the record of a top-level block; nil for blocks the module does not list
// (terraform, provider, variable).
func (w *writer) record(b *blockNode) *blockRec {
	var rec *blockRec
	switch {
	case (b.typ == "resource" || b.typ == "data") && len(b.labels) == 2:
		rec = &blockRec{kind: artifact.BlockKind(b.typ), typ: b.labels[0], name: b.labels[1]}
	case b.typ == "output" && len(b.labels) == 1:
		rec = &blockRec{kind: artifact.KindOutput, name: b.labels[0]}
	default:
		return nil
	}
	w.blocks = append(w.blocks, rec)
	return rec
}

// value writes an attribute's expression, recording where it starts and ends.
func (w *writer) value(e tokens, rec *blockRec, path string) {
	if rec == nil {
		w.expr(e)
		return
	}
	a := &attrRec{path: path}
	rec.attrs = append(rec.attrs, a)
	w.mark(&a.start)
	w.expr(e)
	w.mark(&a.end)
}

// singleLineRun returns the end of the run of single-line attributes starting at i.
func singleLineRun(items []item, i int) int {
	for i < len(items) && items[i].block == nil && items[i].name != "" && !items[i].val.multiline() {
		i++
	}
	return i
}

// attributes writes a run of single-line attributes with their `=` aligned.
func (w *writer) attributes(run []item, rec *blockRec, prefix string) {
	width := 0
	for _, it := range run {
		width = max(width, columns(it.name))
	}
	for _, it := range run {
		w.text(it.name)
		w.text(strings.Repeat(" ", width-columns(it.name)+1))
		w.text("= ")
		w.value(it.val, rec, prefix+it.name)
		w.newline()
	}
}

func (w *writer) block(b *blockNode, rec *blockRec, prefix string) {
	w.text(b.typ)
	for _, l := range b.labels {
		w.text(" " + str(l).text)
	}
	w.open(" {")
	w.newline()
	w.body(b.body.items, rec, prefix)
	w.close("}")
	w.newline()
}

// inline is an expression's source on its own, and its spans (the generator interpolates
// only references, which are leaves; a multi-line expression keeps its line breaks, which
// HCL allows in ${}).
func inline(e tokens) (string, []span) {
	if !e.multiline() {
		return e.text, e.spans
	}
	var w writer
	w.expr(e)
	w.resolve(len(w.out))
	var spans []span
	for _, sp := range w.spans {
		spans = append(spans, *sp)
	}
	return string(append(w.out, w.line...)), spans
}

func (w *writer) expr(e tokens) {
	switch e.kind {
	case leafExpr:
		w.leaf(e)
	case tupleExpr, callExpr:
		open, close := "[", "]"
		if e.kind == callExpr {
			w.text(e.text)
			open, close = "(", ")"
		}
		w.open(open)
		for i, it := range e.items {
			if i > 0 {
				w.text(", ")
			}
			w.expr(it)
		}
		w.close(close)
	case objectExpr:
		w.open("{")
		w.newline()
		items := make([]item, len(e.attrs))
		for i, a := range e.attrs {
			items[i] = item{name: a.key, val: a.val}
		}
		w.body(items, nil, "")
		w.close("}")
	}
}

// columns is the display width of a name as terraform fmt counts it: bytes for ASCII,
// grapheme clusters otherwise.
func columns(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			n, err := textseg.TokenCount([]byte(s), textseg.ScanGraphemeClusters)
			if err != nil {
				return len(s)
			}
			return n
		}
	}
	return len(s)
}
