package spec

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fleetc/fleetc/spec/diag"
)

// Index maps JSON pointers of a loaded spec to source ranges, so anything that
// knows where a value lives in the document can say where it is in the file.
type Index struct {
	file   string
	src    string // the parsed bytes, for each range's Line
	lines  []int  // byte offset of each line start
	size   int
	keys   map[string]diag.Range
	values map[string]diag.Range
	// containers marks paths whose value is a map or a list.
	containers map[string]bool
}

func newIndex(file string, src []byte) *Index {
	idx := &Index{file: file, src: string(src), lines: []int{0}, size: len(src), keys: map[string]diag.Range{}, values: map[string]diag.Range{}, containers: map[string]bool{}}
	for i, b := range src {
		if b == '\n' {
			idx.lines = append(idx.lines, i+1)
		}
	}
	return idx
}

func (x *Index) rangeAt(line, col, width int) *diag.Range {
	if line < 1 {
		line = 1
	}
	if col < 1 {
		col = 1
	}
	off := 0
	if line-1 < len(x.lines) {
		off = x.lines[line-1] + col - 1
	}
	if width < 1 {
		width = 1
	}
	return &diag.Range{Filename: x.file,
		Start: diag.Pos{Line: line, Column: col, Byte: off},
		End:   diag.Pos{Line: line, Column: col + width, Byte: off + width},
		Line:  x.line(line)}
}

// line is the text of line n (from 1) without its line break; a substring of src, so
// ranges share the one copy.
func (x *Index) line(n int) string {
	if n < 1 || n > len(x.lines) {
		return ""
	}
	start, end := x.lines[n-1], len(x.src)
	if n < len(x.lines) {
		end = x.lines[n] - 1
	}
	return strings.TrimRight(x.src[start:end], "\r")
}

func (x *Index) setKey(path string, n *yaml.Node) {
	x.keys[path] = *x.rangeAt(n.Line, n.Column, len(n.Value))
}

func (x *Index) setValue(path string, n *yaml.Node) {
	if _, ok := x.values[path]; ok {
		return // an alias resolves to its anchor; keep the use site
	}
	x.containers[path] = n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode
	w := 0
	if n.Kind == yaml.ScalarNode && !strings.Contains(n.Value, "\n") {
		w = len(n.Value)
	}
	x.values[path] = *x.rangeAt(n.Line, n.Column, w)
}

// Value returns the range of the value at path, or of its nearest ancestor that exists
// in the file (a defaulted value has no position of its own).
func (x *Index) Value(path string) *diag.Range {
	return x.lookup(path, x.values)
}

// Key returns the range of the key naming path, falling back like Value.
func (x *Index) Key(path string) *diag.Range {
	if r, ok := x.keys[path]; ok {
		return &r
	}
	return x.lookup(path, x.values)
}

func (x *Index) lookup(path string, m map[string]diag.Range) *diag.Range {
	for {
		if r, ok := m[path]; ok {
			return &r
		}
		if path == "" {
			return x.rangeAt(1, 1, 0)
		}
		i := strings.LastIndexByte(path, '/')
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

// End is the end of the file, where notes about the whole file go.
func (x *Index) End() *diag.Range {
	return x.rangeAt(len(x.lines), 1+x.size-x.lines[len(x.lines)-1], 0)
}

// Has reports whether path was written in the file.
func (x *Index) Has(path string) bool {
	_, ok := x.values[path]
	return ok
}

// Locate sets the Subject of every diagnostic that has a Path but no Subject.
func (x *Index) Locate(ds diag.Diagnostics) {
	for _, d := range ds {
		if d.Subject == nil {
			d.Subject = x.Subject(d.Path)
		}
	}
}

// Subject is the tightest range for a diagnostic about path: the value itself for a
// scalar, the key that names it for a map or list (the value's own position would be
// the line below), the nearest written ancestor for a defaulted value.
func (x *Index) Subject(path string) *diag.Range {
	for {
		if r, ok := x.values[path]; ok {
			if k, isKey := x.keys[path]; isKey && x.containers[path] {
				return &k
			}
			return &r
		}
		if path == "" {
			return x.rangeAt(1, 1, 0)
		}
		path = path[:max(strings.LastIndexByte(path, '/'), 0)]
	}
}
