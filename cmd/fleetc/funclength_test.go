package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function may be, from `func` to its closing brace:
// past it a function usually does several things that read better under names of their own.
const maxFuncLines = 80

// longFuncs are the functions already over maxFuncLines, by file and name (Recv.Method for a
// method). The list only shrinks: a function split below the limit must leave it (the test
// says so), and a new long function fails the test instead of joining it.
var longFuncs = []string{
	"cmd/fleetc/cli/build.go build",
	"cmd/fleetc/cli/diff.go runDiff",
	"cmd/fleetc/cli/plan.go runChange",
	"cmd/fleetc/dev/dev.go Run",
	"cmd/fleetc/dev/dev.go session",
	"cmd/fleetc/dev/server.go Fleet.Snapshot",
	"compiler/deploy/deploy.go Prepare",
	"compiler/review/render.go Report.markdown",
	"compiler/runtimeconfig/runtimeconfig.go Build",
	"compiler/terraform/agents.go gen.workerRole",
	"compiler/terraform/state.go gen.state",
	"compiler/terraform/workflows.go gen.workflow",
	"runtime/worker/app.go Build",
	"schemas/runtimeconfig/runtimeconfig.go Config.Check",
}

// TestFunctionLength holds the module's non-test functions to maxFuncLines but for
// longFuncs, and keeps longFuncs exact so the count can only fall.
func TestFunctionLength(t *testing.T) {
	long, err := longFunctions("../..", maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range long {
		if !slices.Contains(longFuncs, name) {
			t.Errorf("%s is %d lines (more than %d): split it where it reads better", name, n, maxFuncLines)
		}
	}
	for _, name := range longFuncs {
		if _, ok := long[name]; !ok {
			t.Errorf("%s is no longer over %d lines (or is gone): remove it from longFuncs", name, maxFuncLines)
		}
	}
}

// longFunctions returns, by "file Name", the line count of every function with a body in
// the non-test Go files under root that is longer than limit lines. Generated trees
// (testdata), hidden directories and node_modules hold no code of the module.
func longFunctions(root string, limit int) (map[string]int, error) {
	fset := token.NewFileSet()
	long := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > limit {
				long[filepath.ToSlash(rel)+" "+funcName(fn)] = n
			}
		}
		return nil
	})
	return long, err
}

// funcName is Name, or Recv.Name for a method (pointer or not, type parameters dropped).
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
