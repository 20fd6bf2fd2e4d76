package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	goyaml "github.com/goccy/go-yaml"
	goyamlparser "github.com/goccy/go-yaml/parser"
	"gopkg.in/yaml.v3"

	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// MaxFileBytes bounds what fleetc reads of one spec, wherever it comes from (a file, stdin,
// a git revision for diff): far above any real fleet (a fleet.yaml is a few KiB, the
// 1,000-class benchmark fleet under 1 MiB), low enough that an untrusted pull request cannot
// make a CI machine read gigabytes.
const MaxFileBytes = 4 << 20

// Limits that keep a hostile file from exhausting memory or time.
const (
	maxNodes = 200_000 // after alias expansion (billion laughs)
	maxDepth = 64
	// maxAliasValues bounds what aliases may add, in all: sharing a block of a few dozen
	// values across a hundred events fits; an exponential expansion is refused at its alias
	// before it is converted (converting 200,000 values took 2 s and starved the fuzzer).
	maxAliasValues = 20_000
)

// File is a loaded fleet.yaml: the typed spec plus where each value came from.
type File struct {
	Name  string
	Src   []byte
	Fleet *Fleet
	Index *Index
	// Removed lists the parts of the spec ("/agents/coder") left out of Fleet because they
	// have input errors; Fleet then holds the rest, so that references and rules can still be
	// checked for every part that parsed. Affected lists the parts whose checks involve a
	// removed one. Both are empty when the spec loaded without errors.
	Removed, Affected map[string]bool
	// Env is the environment this File is (see Select); "" for the spec as written.
	Env string
	// Local: the fleet is built to run on this machine (fleetc dev, an emulator), where
	// workers inherit the developer's environment (api_key_env), not a deployed one.
	Local bool
	// doc is the whole document as loaded, environments included, when it declares any:
	// Select merges one environment's overrides over it.
	doc map[string]any
}

// LoadFile reads path with ReadFile and loads it. Read failures are diagnostics too.
func LoadFile(path string) (*File, diag.Diagnostics) {
	src, err := ReadFile(path)
	if err != nil {
		var ds diag.Diagnostics
		d := ds.Errorf("P009", "", "%v", err)
		var ns *NotSpecError
		if errors.As(err, &ns) && strings.HasSuffix(ns.Why, "not a fleet.yaml file") {
			d.Detail = "Pass the spec file itself, e.g. " + strings.TrimSuffix(path, "/") + "/fleet.yaml."
		}
		d.Subject = &diag.Range{Filename: path, Start: diag.Pos{Line: 1, Column: 1}, End: diag.Pos{Line: 1, Column: 1}}
		return nil, ds
	}
	f, ds := Load(path, src)
	if !ds.HasErrors() {
		ds = append(ds, f.checkFiles(filepath.Dir(path))...)
	}
	return f, ds
}

// Load parses src as fleet.yaml. It never panics; every problem is a positioned diagnostic.
// The returned File's Fleet is nil when the document could not be decoded at all.
func Load(name string, src []byte) (*File, diag.Diagnostics) {
	f := &File{Name: name, Src: src, Index: newIndex(name, src)}
	if ds := f.screen(src); ds != nil {
		return f, ds
	}
	var doc yaml.Node
	if ds := f.parse(src, &doc); ds != nil {
		return f, ds
	}
	var ds diag.Diagnostics
	c := converter{idx: f.Index}
	value := c.convert(doc.Content[0], "", 0)
	ds = append(ds, c.diags...)
	if c.truncated {
		return f, ds.Sorted() // nothing useful can be said about a truncated document
	}
	// Bound the work before the expensive part (schema validation, generation).
	if lds := checkLimits(value, f.Index); lds != nil {
		return f, append(ds, lds...).Sorted()
	}
	if m, ok := value.(map[string]any); ok && m[environmentsKey] != nil {
		f.doc = deepCopy(m).(map[string]any)
	}
	// A value the converter refused (a huge number, a custom tag) became null; report every
	// other problem too, but not a second one about the same value.
	bad := map[string]bool{}
	for _, d := range c.diags {
		bad[d.Path] = true
	}
	return f, f.decode(value, ds, bad)
}

// pin points d at line and column of the spec.
func (f *File) pin(d *diag.Diagnostic, line, col int) {
	d.Subject = f.Index.rangeAt(line, col, 0)
}

// screen refuses, before any parser runs, a file that is not a spec's text (too large, not
// UTF-8, CR line endings, empty) or that would make the parsers recurse too deep or too long.
func (f *File) screen(src []byte) diag.Diagnostics {
	var ds diag.Diagnostics
	if len(src) > MaxFileBytes {
		f.pin(ds.Errorf("P009", "", "the file is %d bytes; fleet specs are limited to %d bytes", len(src), MaxFileBytes), 1, 1)
		return ds
	}
	if !utf8.Valid(src) {
		line, col := firstInvalidUTF8(src)
		d := ds.Errorf("P009", "", "the file is not valid UTF-8")
		d.Detail = "fleet.yaml must be UTF-8 text; re-save it with UTF-8 encoding."
		f.pin(d, line, col)
		return ds
	}
	if line, col, ok := bareCR(src); ok {
		// YAML reads a lone CR as a line break, fleetc's positions and comment handling do
		// not: refused by name, not mistaken for one long comment ("the file is empty").
		d := ds.Errorf("P009", "", "line %d ends with a carriage return alone (CR line endings); fleet.yaml lines end with LF or CRLF", line)
		d.Detail = "Convert the line endings to LF, e.g. tr '\\r' '\\n' < fleet.yaml > fleet.yaml.lf, or save the file with Unix (LF) line endings."
		f.pin(d, line, col)
		return ds
	}
	if len(bytes.TrimSpace(stripComments(src))) == 0 {
		d := ds.Errorf("P009", "", "the file is empty")
		d.Detail = "A fleet spec starts with `version: 1`; see examples/minimal/fleet.yaml."
		f.pin(d, 1, 1)
		return ds
	}
	if line, col, what, ok := prescan(src); !ok {
		d := ds.Errorf("P001", "", "the document is too large or too deeply nested: %s", what)
		d.Detail = "fleetc bounds what one spec can ask of its parsers (specs in pull requests may be untrusted); real fleets nest a few levels. Flatten the structure here."
		f.pin(d, line, col)
		return ds
	}
	return nil
}

// parse decodes src into doc, refusing a syntax error and a file of several documents (the
// decoder would read the first and drop the rest).
func (f *File) parse(src []byte, doc *yaml.Node) diag.Diagnostics {
	var ds diag.Diagnostics
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(doc); err != nil {
		_, msg := yamlError(err)
		line, col := syntaxErrorPos(src, err)
		d := ds.Errorf("P001", "", "YAML syntax error: %s", msg)
		if strings.Contains(msg, "tab") || bytes.Contains(src, []byte("\t")) && strings.Contains(msg, "cannot start any token") {
			d.Detail = "YAML does not allow tabs for indentation; indent with spaces."
		}
		f.pin(d, line, col)
		return ds
	}
	if starts := documentStarts(dec, src, doc.Line); len(starts) > 1 {
		lines := make([]string, len(starts))
		for i, l := range starts {
			lines[i] = strconv.Itoa(l)
		}
		d := ds.Errorf("P001", "", "the file holds %d YAML documents (starting at lines %s); a fleet spec is exactly one", len(starts), strings.Join(lines, ", "))
		d.Detail = "A line `---` starts a new YAML document. Keep one fleet per file: split the others into their own files, or remove the separator."
		f.pin(d, starts[1], 1)
		return ds
	}
	return nil
}

// decode checks value against the schema and decodes it into f.Fleet, leaving out the parts
// with input errors when the rest is a valid spec by itself. ds are the problems found so
// far; bad the paths of values already reported.
func (f *File) decode(value any, ds diag.Diagnostics, bad map[string]bool) diag.Diagnostics {
	at := func(d *diag.Diagnostic, line, col int) {
		d.Subject = f.Index.rangeAt(line, col, 0)
	}
	for _, d := range validateSchema(value, f.Index) {
		if !bad[d.Path] {
			ds = append(ds, d)
		}
	}
	if ds.HasErrors() {
		// Leave out the parts with errors and load the rest, if it is a valid spec by itself.
		removed, affected, ok := leaveOut(value, ds)
		if !ok || validateSchema(value, f.Index).HasErrors() {
			return ds.Sorted()
		}
		f.Removed, f.Affected = removed, affected
	}
	raw, err := json.Marshal(value)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		f.Fleet = new(Fleet)
		err = dec.Decode(f.Fleet)
	}
	if err != nil {
		f.Fleet = nil
	}
	if err != nil && f.Removed != nil {
		return ds.Sorted()
	}
	if err != nil {
		// The schema should have caught this; say so rather than pretend.
		d := ds.Errorf("P003", "", "spec does not decode: %v", err)
		d.Detail = "This is a fleetc bug: the schema accepted a document the Go types refuse. Please report it with the spec."
		at(d, 1, 1)
		return ds
	}
	return ds.Sorted()
}

// syntaxErrorPos is where the parser noticed a syntax error. yaml.v3 reports only a line:
// exact for errors the scanner finds (a tab, a stray ':'), but for an error inside a
// construct (an unclosed flow mapping) the line the construct began on, counted from zero.
// goccy/go-yaml's parser keeps the token it stopped at, with its column. Take goccy's
// position unless it lies before yaml.v3's line (it can stop earlier, at a scalar that a
// stray ':' turns into a mapping key), or goccy accepted what yaml.v3 refused.
func syntaxErrorPos(src []byte, err error) (line, col int) {
	const (
		positionLines  = 50        // lines past yaml.v3's line that goccy may need to find the token
		positionWindow = 256 << 10 // bytes goccy may parse
	)
	line, _ = yamlError(err)
	defer func() {
		if recover() != nil { // a second parser must never turn a syntax error into a crash
			line, col = max(line, 1), 1
		}
	}()
	// goccy sees only the document up to a little past the line yaml.v3 named, and not at
	// all when that is large: positioning is a courtesy, never worth unbounded work.
	window := src
	for i, n := 0, 0; i < len(src); i++ {
		if src[i] == '\n' {
			if n++; n >= line+positionLines {
				window = src[:i+1]
				break
			}
		}
	}
	if len(window) > positionWindow {
		return line, 1
	}
	_, perr := goyamlparser.ParseBytes(window, 0)
	var se *goyaml.SyntaxError
	if errors.As(perr, &se) && se.Token != nil && se.Token.Position.Line >= line {
		return se.Token.Position.Line, max(se.Token.Position.Column, 1)
	}
	return line, 1
}

// documentStarts lists the first line of every document in the stream, given the first
// document's line (the rest are read from dec). A document after a "---" starts there.
func documentStarts(dec *yaml.Decoder, src []byte, first int) []int {
	starts := []int{first}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if err == io.EOF {
			return starts
		}
		line := next.Line
		if err != nil {
			line, _ = yamlError(err)
		}
		starts = append(starts, separatorBefore(src, line, starts[len(starts)-1]))
		if err != nil {
			return starts
		}
	}
}

// separatorBefore is the line of the last "---" at or before line and after prev, or line.
func separatorBefore(src []byte, line, prev int) int {
	lines := bytes.Split(src, []byte("\n"))
	for l := min(line, len(lines)); l > prev; l-- {
		if t := bytes.TrimRight(lines[l-1], " \t\r"); bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			return l
		}
	}
	return line
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlError(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 1, strings.TrimPrefix(msg, "yaml: ")
}

// bareCR finds the first carriage return not followed by a line feed, positioned on
// LF-separated lines (col is the CR's byte column).
func bareCR(src []byte) (line, col int, ok bool) {
	for i := bytes.IndexByte(src, '\r'); i >= 0; {
		if i+1 == len(src) || src[i+1] != '\n' {
			start := bytes.LastIndexByte(src[:i], '\n') + 1
			return bytes.Count(src[:i], []byte("\n")) + 1, i - start + 1, true
		}
		next := bytes.IndexByte(src[i+1:], '\r')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return 0, 0, false
}

func firstInvalidUTF8(src []byte) (line, col int) {
	line, col = 1, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return line, col
}

func stripComments(src []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(src, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) == 0 || t[0] == '#' || string(t) == "---" {
			continue
		}
		out = append(out, t...)
	}
	return out
}

// converter turns a yaml.Node tree into plain JSON values (map[string]any, []any, string,
// json.Number, bool, nil), recording positions and refusing what JSON cannot say.
type converter struct {
	idx       *Index
	diags     diag.Diagnostics
	nodes     int
	truncated bool // a size or depth limit was hit
	// aliasValues counts the values aliases expanded to so far; expanded memoizes each
	// anchored node's size, so the count is linear in the document, however deep the aliasing.
	aliasValues int
	expanding   int // aliases being converted, nested
	expanded    map[*yaml.Node]int
}

// expandedSize is the number of values n converts to, aliases expanded, saturating just past
// maxAliasValues.
func (c *converter) expandedSize(n *yaml.Node) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1
		}
		return min(maxAliasValues+1, 1+c.expandedSize(n.Alias))
	}
	if v, ok := c.expanded[n]; ok {
		return v
	}
	if c.expanded == nil {
		c.expanded = map[*yaml.Node]int{}
	}
	c.expanded[n] = maxAliasValues + 1 // a node that contains itself expands without end
	size := 1
	for _, child := range n.Content {
		if size += c.expandedSize(child); size > maxAliasValues {
			size = maxAliasValues + 1
			break
		}
	}
	c.expanded[n] = size
	return size
}

func (c *converter) errorAt(n *yaml.Node, path, code, format string, args ...any) *diag.Diagnostic {
	d := c.diags.Errorf(code, path, format, args...)
	d.Subject = c.idx.rangeAt(n.Line, n.Column, len(n.Value))
	return d
}

func (c *converter) convert(n *yaml.Node, path string, depth int) any {
	c.nodes++
	if c.nodes > maxNodes || depth > maxDepth {
		if !c.truncated {
			c.truncated = true
			d := c.errorAt(n, path, "P001", "the document is too large or too deeply nested (over %d values or %d levels)", maxNodes, maxDepth)
			d.Detail = "Anchors and aliases that expand exponentially (a \"billion laughs\") are refused; write the values out."
		}
		return nil
	}
	c.idx.setValue(path, n)
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil || c.truncated {
			return nil
		}
		if c.expanding == 0 { // the aliases inside an expansion are in its size already
			if c.aliasValues += c.expandedSize(n.Alias); c.aliasValues > maxAliasValues {
				c.truncated = true
				d := c.errorAt(n, path, "P001", "aliases expand to over %d values", maxAliasValues)
				d.Detail = "Anchors and aliases that expand exponentially (a \"billion laughs\") are refused; write the values out."
				return nil
			}
		}
		c.expanding++
		defer func() { c.expanding-- }()
		return c.convert(n.Alias, path, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return c.convert(n.Content[0], path, depth)
	case yaml.MappingNode:
		obj := make(map[string]any, len(n.Content)/2)
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				c.errorAt(k, path, "P003", "mapping keys must be plain strings")
				continue
			}
			if k.Tag == "!!merge" {
				d := c.errorAt(k, path, "P002", "merge keys (<<) are not supported")
				d.Detail = "Write the fields out; fleetc keeps each value's position, which merges would blur."
				continue
			}
			child := path + "/" + jsonptr.Escape(k.Value)
			if prev, dup := seen[k.Value]; dup {
				d := c.errorAt(k, child, "P006", "duplicate key %q (first defined at line %d)", k.Value, prev.Line)
				d.Detail = "YAML keeps only one of them; remove or rename the other."
				continue
			}
			seen[k.Value] = k
			c.idx.setKey(child, k)
			obj[k.Value] = c.convert(v, child, depth+1)
		}
		return obj
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			arr = append(arr, c.convert(item, path+"/"+strconv.Itoa(i), depth+1))
		}
		return arr
	case yaml.ScalarNode:
		return c.scalar(n, path)
	}
	return nil
}

func (c *converter) scalar(n *yaml.Node, path string) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			c.errorAt(n, path, "P003", "%q is not a boolean", n.Value)
			return nil
		}
		return b
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		bi, ok := new(big.Int).SetString(s, 0)
		if !ok {
			c.errorAt(n, path, "P003", "%q is not an integer", n.Value)
			return nil
		}
		if bi.BitLen() > 53 {
			c.errorAt(n, path, "P003", "%s is too large a number (limit ±2^53)", n.Value)
			return nil
		}
		return json.Number(bi.String())
	case "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > 1<<53 {
			c.errorAt(n, path, "P003", "%q is not a finite number fleetc can use", n.Value)
			return nil
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	case "!!str", "!!binary", "!!timestamp":
		return n.Value
	default:
		d := c.errorAt(n, path, "P003", "unsupported YAML tag %s", n.Tag)
		d.Detail = "fleet.yaml uses plain YAML values only: strings, numbers, booleans, lists and maps."
		return nil
	}
}

// Pointer builds a JSON pointer from path segments, escaping each.
func Pointer(segs ...string) string { return jsonptr.Join(segs...) }

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}
