package onefact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	modulePath = "github.com/fleetc/fleetc"
	limitsPath = modulePath + "/schemas/awslimits"
)

// commonValues are values that also occur as units or round numbers with no AWS limit behind
// them (a 10-entry slice, a one-minute tick, a 1 MiB read buffer, HTTP status 400). A
// constant of one of these values is a copy of a limit only when its name mentions the limit's service; a literal of one, which has no name, is never
// flagged. Every value below 1000 is common but those in distinctiveSmall. Every other value
// of the table is distinctive: a constant or limit-like literal of it anywhere is a copy.
var commonValues = map[int64]string{
	1000: "milli", 1024: "kibi", 1500: "round", 2048: "power of two", 2400: "round", 2500: "round",
	3000: "round", 4096: "page size", 5000: "round", 6000: "round", 10_000: "round", 86400: "a day in seconds",
	1 << 20:                 "a 1 MiB buffer",
	int64(time.Second):      "a second",
	int64(time.Minute):      "a minute",
	int64(5 * time.Minute):  "five minutes",
	int64(20 * time.Second): "twenty seconds",
	int64(24 * time.Hour):   "a day",
	int64(48 * time.Hour):   "two days",
}

// distinctiveSmall are the values below 1000 that are distinctive anyway.
var distinctiveSmall = map[int64]string{900: "15 minutes in seconds", 185: "EventBridge's retry attempts"}

func common(n int64) bool {
	_, listed := commonValues[n]
	_, small := distinctiveSmall[n]
	return listed || (n < 1000 && !small)
}

// serviceWords maps a limit name's leading word to the words that name its service.
var serviceWords = map[string][]string{
	"SQS":         {"sqs", "queue"},
	"PutEvents":   {"putevents", "eventbridge", "bus"},
	"EventBridge": {"putevents", "eventbridge", "bus", "rule", "target"},
	"SFN":         {"sfn", "stepfunctions", "statemachine", "asl", "callback", "map"},
	"Lambda":      {"lambda"},
	"ESM":         {"lambda", "esm"},
	"DynamoDB":    {"dynamo", "idem"},
	"AgentCore":   {"agentcore"},
	"CloudWatch":  {"alarm", "cloudwatch"},
	"CodeDeploy":  {"codedeploy"},
}

// notLimits are named constants of a limit's value that are no AWS limit, each with why.
var notLimits = map[string]string{
	"github.com/fleetc/fleetc/spec.positionWindow": "the bytes of YAML the position finder parses, a parser bound",
}

// limit is one constant of the table.
type limit struct {
	name  string
	words []string
}

// reading is how a value is looked up: a time.Duration value only among durations (in
// nanoseconds), any other value among sizes, counts and durations in whole seconds.
func reading(v constant.Value, duration bool) string {
	if duration {
		return "ns:" + v.ExactString()
	}
	return v.ExactString()
}

// listed is a package as `go list -export -deps -json` describes it.
type listed struct {
	ImportPath, Export, Dir string
	GoFiles                 []string
	Standard                bool
	Module                  *struct{ Path string }
}

// TestLimitsDefinedOnce: every AWS limit is a constant of schemas/awslimits, and no other
// product package defines the same value itself, in whatever spelling (43200*time.Second,
// 12*time.Hour, 720*time.Minute or 43_200 for the 12 h visibility ceiling): each package is
// type-checked and each constant declaration, and each constant in a limit-like position
// (a comparison, a keyed field value, an assignment, a return value, an argument of min or
// max), is evaluated. A constant derived from an awslimits constant (directly or through
// another such constant) is an import, not a copy.
func TestLimitsDefinedOnce(t *testing.T) {
	pkgs := listModule(t)
	exports := map[string]string{}
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	c := &checker{fset: fset, imp: imp, limits: map[string][]limit{}, derived: map[string]bool{}}
	var product []listed
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path != modulePath || p.Standard {
			continue
		}
		if p.ImportPath == limitsPath {
			c.readTable(t, p)
			continue
		}
		rel := strings.TrimPrefix(p.ImportPath, modulePath+"/")
		if strings.HasPrefix(rel, "tools/") || strings.HasPrefix(rel, "internal/verifytest") {
			continue
		}
		product = append(product, p)
	}
	if len(c.limits) < 40 {
		t.Fatalf("read %d limit values from %s: the table reader is broken", len(c.limits), limitsPath)
	}
	if len(product) < 50 {
		t.Fatalf("found %d product packages: the listing is broken", len(product))
	}
	for _, p := range product { // go list -deps lists dependencies first
		c.check(t, p)
	}
	sort.Strings(c.found)
	for _, f := range c.found {
		t.Error(f)
	}
}

func listModule(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Export,Dir,GoFiles,Standard,Module", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

type checker struct {
	fset    *token.FileSet
	imp     types.Importer
	limits  map[string][]limit // value (exact string) -> the limits of that value
	derived map[string]bool    // package-level constants ("path.Name") derived from the table
	found   []string
}

// typeCheck parses and checks a package's product files from source.
func (c *checker) typeCheck(t *testing.T, p listed) ([]*ast.File, *types.Info) {
	t.Helper()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(c.fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: c.imp}
	if _, err := conf.Check(p.ImportPath, c.fset, files, info); err != nil {
		t.Fatalf("type-check %s: %v", p.ImportPath, err)
	}
	return files, info
}

// readTable records each awslimits constant under its value; a duration also under its
// whole seconds, the unit AWS APIs take.
func (c *checker) readTable(t *testing.T, p listed) {
	_, info := c.typeCheck(t, p)
	for id, obj := range info.Defs {
		k, ok := obj.(*types.Const)
		if !ok || !id.IsExported() || k.Parent() != k.Pkg().Scope() {
			continue
		}
		c.derived[key(k)] = true
		l := limit{name: k.Name(), words: wordsOf(t, k.Name())}
		v := constant.ToInt(k.Val())
		duration := isDuration(k.Type())
		c.limits[reading(v, duration)] = append(c.limits[reading(v, duration)], l)
		if n, ok := constant.Int64Val(v); ok && duration && n%int64(time.Second) == 0 {
			s := reading(constant.MakeInt64(n/int64(time.Second)), false)
			c.limits[s] = append(c.limits[s], l)
		}
	}
}

func wordsOf(t *testing.T, name string) []string {
	for prefix, words := range serviceWords {
		if strings.HasPrefix(name, prefix) {
			return words
		}
	}
	t.Fatalf("awslimits.%s: its leading word names no service in serviceWords", name)
	return nil
}

func isDuration(t types.Type) bool { return t != nil && t.String() == "time.Duration" }

func key(o types.Object) string { return o.Pkg().Path() + "." + o.Name() }

// usesTable says whether e refers to an awslimits constant, or to a constant derived from one.
func (c *checker) usesTable(info *types.Info, e ast.Expr, local map[types.Object]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if k, ok := info.Uses[id].(*types.Const); ok && k.Pkg() != nil && (local[k] || c.derived[key(k)]) {
				found = true
			}
		}
		return !found
	})
	return found
}

// namesConst says whether e refers to any constant of this module (a literal does not).
func namesConst(info *types.Info, e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if k, ok := info.Uses[id].(*types.Const); ok && k.Pkg() != nil && strings.HasPrefix(k.Pkg().Path(), modulePath) {
				found = true
			}
		}
		return !found
	})
	return found
}

func (c *checker) check(t *testing.T, p listed) {
	files, info := c.typeCheck(t, p)
	// Constant declarations: derived ones first, to a fixed point (a constant may use one
	// declared after it).
	type decl struct {
		obj  *types.Const
		expr ast.Expr
		pos  token.Pos
	}
	var decls []decl
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			g, ok := n.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				return true
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, id := range vs.Names {
					k, ok := info.Defs[id].(*types.Const)
					if !ok || i >= len(vs.Values) {
						continue
					}
					decls = append(decls, decl{k, vs.Values[i], id.Pos()})
				}
			}
			return true
		})
	}
	local := map[types.Object]bool{}
	for changed := true; changed; {
		changed = false
		for _, d := range decls {
			if !local[d.obj] && c.usesTable(info, d.expr, local) {
				local[d.obj], changed = true, true
				if d.obj.Parent() == d.obj.Pkg().Scope() {
					c.derived[key(d.obj)] = true
				}
			}
		}
	}
	for _, d := range decls {
		if local[d.obj] {
			continue
		}
		if _, ok := notLimits[key(d.obj)]; ok {
			continue
		}
		ls := c.matches(d.obj.Val(), isDuration(d.obj.Type()), strings.ToLower(d.obj.Name()))
		c.report(d.pos, fmt.Sprintf("constant %s = %s", d.obj.Name(), d.obj.Val().ExactString()), ls)
	}
	// Literals in limit-like positions.
	for _, f := range files {
		for _, e := range limitPositions(f) {
			tv := info.Types[e]
			if tv.Value == nil || namesConst(info, e) {
				continue
			}
			c.report(e.Pos(), "literal "+tv.Value.ExactString(), c.matches(tv.Value, isDuration(tv.Type), ""))
		}
	}
}

// matches lists the limits v equals. A common value matches only a named constant whose
// name mentions the limit's service.
func (c *checker) matches(v constant.Value, duration bool, name string) []limit {
	iv := constant.ToInt(v)
	if iv.Kind() != constant.Int {
		return nil
	}
	ls := c.limits[reading(iv, duration)]
	n, exact := constant.Int64Val(iv)
	if !exact || !common(n) {
		return ls
	}
	var out []limit
	for _, l := range ls {
		for _, w := range l.words {
			if name != "" && strings.Contains(name, w) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func (c *checker) report(pos token.Pos, what string, ls []limit) {
	if len(ls) == 0 {
		return
	}
	var names []string
	for _, l := range ls {
		names = append(names, "awslimits."+l.name)
	}
	sort.Strings(names)
	at := c.fset.Position(pos)
	root, _ := filepath.Abs("../..")
	rel, _ := filepath.Rel(root, at.Filename)
	c.found = append(c.found, fmt.Sprintf("%s:%d: %s copies %s; import it", filepath.ToSlash(rel), at.Line, what, strings.Join(names, " or ")))
}

// limitPositions are the expressions of f where a limit would be compared or set: comparison
// operands, keyed field values, assigned and returned values, arguments of min and max.
func limitPositions(f *ast.File) []ast.Expr {
	var out []ast.Expr
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			switch n.Op {
			case token.LSS, token.LEQ, token.GTR, token.GEQ, token.EQL, token.NEQ:
				out = append(out, n.X, n.Y)
			}
		case *ast.KeyValueExpr:
			out = append(out, n.Value)
		case *ast.AssignStmt:
			out = append(out, n.Rhs...)
		case *ast.ReturnStmt:
			out = append(out, n.Results...)
		case *ast.GenDecl:
			for _, sp := range n.Specs {
				if vs, ok := sp.(*ast.ValueSpec); ok && n.Tok == token.VAR {
					out = append(out, vs.Values...)
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "min" || id.Name == "max") {
				out = append(out, n.Args...)
			}
		}
		return true
	})
	return out
}
