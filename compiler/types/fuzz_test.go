package types_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	gotypes "go/types"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/types"
)

// FuzzGeneratedTypesHoldNoCode generates types for random class names, property names,
// descriptions and enum values, and checks invariants that hold only if no spec text
// escaped its comment or literal:
//   - Go: the file parses and type-checks (go/types, with encoding/json stubbed), declares
//     only types and constants (no func, no var: nothing runs on import), and each record's
//     fields carry exactly the record's property names in their json tags;
//   - TypeScript and Python: every line is one the template writes (a line grammar), and
//     every key and enum literal decodes to a string.
//
// Running the real compilers per input would be seconds each, so the toolchains (go vet and
// run, tsc and node, python import, each checked for marker files) run on the seed corpus
// in TestAttacksAreInert; these invariants cost well under a millisecond per input.
//
//	go test ./compiler/types -run '^$' -fuzz FuzzGeneratedTypesHoldNoCode -fuzztime 60s
func FuzzGeneratedTypesHoldNoCode(f *testing.F) {
	for _, h := range attacks {
		f.Add(h.class, h.prop, h.desc, h.enum, h.recordOnly)
	}
	f.Fuzz(func(t *testing.T, class, prop, desc, enum string, recordOnly bool) {
		h := hostile{class, prop, desc, enum, recordOnly}
		out := generate(t, h)
		props := topProperties(h)
		if b, ok := out[types.Go]; ok {
			checkGo(t, b, props)
		}
		checkLines(t, types.TypeScript, out[types.TypeScript], tsGrammar, props)
		checkLines(t, types.Python, out[types.Python], pyGrammar, props)
	})
}

// jsonStr is a double-quoted string literal (checked again by decoding it).
const jsonStr = `"(?:[^"\\\x00-\x1f]|\\.)*"`

// topProperties are the property names of the records fleetOf builds, sorted.
func topProperties(h hostile) string {
	schema := fleetOf(h).Agents[0].Output
	var keys []string
	for k := range schema["properties"].(map[string]any) {
		// A spec is UTF-8 (P009); a literal of anything else holds U+FFFD.
		keys = append(keys, strings.ToValidUTF8(k, "\uFFFD"))
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x00")
}

var (
	tsGrammar = lineGrammar(
		`// .*`, `//`,
		`export interface [A-Za-z][A-Za-z0-9]* \{`,
		`  (`+jsonStr+`)\??: [A-Za-z0-9<>]+;`,
		`\}`,
		`export type [A-Za-z][A-Za-z0-9]* = unknown;`,
		`export type [A-Za-z][A-Za-z0-9]* = (`+jsonStr+`(?: \| `+jsonStr+`)*);`,
	)
	pyGrammar = lineGrammar(
		`#`, `# .*`, `        # .*`,
		`from typing import Any, List, Literal, NotRequired, TypedDict`,
		`[A-Za-z][A-Za-z0-9]* = TypedDict\(`, `    "[A-Za-z][A-Za-z0-9]*",`, `    \{`,
		`        (`+jsonStr+`): (?:NotRequired\[)?[A-Za-z0-9\[\]]+\]?,`,
		`    \},`, `\)`,
		`[A-Za-z][A-Za-z0-9]* = Any`,
		`[A-Za-z][A-Za-z0-9]* = Literal\[(`+jsonStr+`(?:, `+jsonStr+`)*)\]`,
	)
	jsonStrRE = regexp.MustCompile(jsonStr)
	// tsDoc is a TypeScript comment line; its text must not hold the end marker.
	tsDoc = regexp.MustCompile(`^(?:  )?/\*\* (.*) \*/$`)
)

func lineGrammar(rules ...string) *regexp.Regexp {
	return regexp.MustCompile(`^(?:|` + strings.Join(rules, "|") + `)$`)
}

// checkLines holds every line of a TypeScript or Python file to its grammar. Lines are cut
// at every character either language ends a line at, so a payload cannot hide in one. The
// keys of the first record (the Input type) must decode to exactly the properties.
func checkLines(t *testing.T, lang string, b []byte, grammar *regexp.Regexp, props string) {
	t.Helper()
	src := string(b)
	if strings.ContainsAny(src, "\r\v\f\x00\u0085\u2028\u2029\ufeff") {
		t.Fatalf("%s: a line break or NUL other than \\n:\n%s", lang, src)
	}
	var keys []string
	records, inRecord := 0, false
	for i, line := range strings.Split(src, "\n") {
		if lang == types.TypeScript {
			if c := tsDoc.FindStringSubmatch(line); c != nil {
				if strings.Contains(c[1], "*/") {
					t.Fatalf("%s line %d: a comment ends early: %q", lang, i+1, line)
				}
				continue
			}
		}
		m := grammar.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s line %d is not one the template writes: %q", lang, i+1, line)
		}
		switch {
		case strings.HasPrefix(line, "export interface") || strings.HasSuffix(line, "= TypedDict("):
			records++
			inRecord = true
		case line == "}" || line == ")":
			inRecord = false
		}
		for _, group := range m[1:] {
			for _, lit := range jsonStrRE.FindAllString(group, -1) {
				s, err := unquote(lit)
				if err != nil {
					t.Fatalf("%s line %d: %s is not a string literal: %v", lang, i+1, lit, err)
				}
				if inRecord && records == 1 {
					keys = append(keys, s)
				}
			}
		}
	}
	// Python declares the types in reverse: its Input record is the last but one.
	if lang == types.TypeScript {
		slices.Sort(keys)
		if got := strings.Join(keys, "\x00"); got != props {
			t.Fatalf("%s: the Input record's keys are %q, want %q", lang, got, props)
		}
	}
}

// unquote decodes a TypeScript or Python string literal as quote writes them.
func unquote(lit string) (string, error) {
	var b strings.Builder
	rs := []rune(lit[1 : len(lit)-1])
	for i := 0; i < len(rs); i++ {
		if rs[i] != '\\' {
			b.WriteRune(rs[i])
			continue
		}
		i++
		if i == len(rs) {
			return "", fmt.Errorf("a trailing backslash")
		}
		var hex string
		switch rs[i] {
		case '"', '\\':
			b.WriteRune(rs[i])
			continue
		case 'n', 't', 'r':
			b.WriteString(map[rune]string{'n': "\n", 't': "\t", 'r': "\r"}[rs[i]])
			continue
		case 'u':
			if i+1 < len(rs) && rs[i+1] == '{' {
				end := slices.Index(rs[i:], '}')
				if end < 0 {
					return "", fmt.Errorf("an unterminated \\u{")
				}
				hex, i = string(rs[i+2:i+end]), i+end
			} else if i+4 < len(rs) {
				hex, i = string(rs[i+1:i+5]), i+4
			}
		case 'U':
			if i+8 < len(rs) {
				hex, i = string(rs[i+1:i+9]), i+8
			}
		default:
			return "", fmt.Errorf("escape \\%c", rs[i])
		}
		n, err := strconv.ParseUint(hex, 16, 32)
		if err != nil {
			return "", fmt.Errorf("escape %q: %v", hex, err)
		}
		b.WriteRune(rune(n))
	}
	return b.String(), nil
}

// checkGo parses and type-checks a Go file and holds it to declaring types and constants
// only, with each record's json tags naming exactly its properties.
func checkGo(t *testing.T, b []byte, props string) {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "types.go", b, parser.ParseComments)
	if err != nil {
		t.Fatalf("Go does not parse: %v\n%s", err, b)
	}
	for _, imp := range file.Imports {
		if imp.Path.Value != `"encoding/json"` {
			t.Fatalf("Go imports %s", imp.Path.Value)
		}
	}
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok == token.VAR {
			t.Fatalf("Go declares code: %s", b[fset.Position(d.Pos()).Offset:fset.Position(d.End()).Offset])
		}
	}
	conf := gotypes.Config{Importer: jsonStub{}}
	if _, err := conf.Check("fleettypes", fset, []*ast.File{file}, nil); err != nil {
		t.Fatalf("Go does not type-check: %v\n%s", err, b)
	}
	// Every struct field's tag is exactly one json key, and the Input and Output records
	// (the same schema) name exactly the properties.
	whole := 0
	ast.Inspect(file, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok {
			return true
		}
		var names []string
		for _, f := range st.Fields.List {
			raw, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				t.Fatalf("tag %s: %v", f.Tag.Value, err)
			}
			v, ok := reflect.StructTag(raw).Lookup("json")
			if !ok || `json:`+strconv.Quote(v) != raw {
				t.Fatalf("tag %s holds more than one json key", f.Tag.Value)
			}
			name, _, _ := strings.Cut(v, ",")
			names = append(names, name)
		}
		slices.Sort(names)
		if strings.Join(names, "\x00") == props {
			whole++
		}
		return true
	})
	if whole != 2 {
		t.Fatalf("%d structs carry exactly the properties %q, want 2 (Input and Output)\n%s", whole, props, b)
	}
}

// jsonStub is encoding/json as far as generated Go uses it, so type-checking a fuzz input
// needs no export data.
type jsonStub struct{}

func (jsonStub) Import(path string) (*gotypes.Package, error) {
	pkg := gotypes.NewPackage("encoding/json", "json")
	name := gotypes.NewTypeName(token.NoPos, pkg, "RawMessage", nil)
	gotypes.NewNamed(name, gotypes.NewSlice(gotypes.Typ[gotypes.Byte]), nil)
	pkg.Scope().Insert(name)
	pkg.MarkComplete()
	return pkg, nil
}
