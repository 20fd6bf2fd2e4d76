package check

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestEveryReportReached: every r.Add / r.Warn call in the rule files is reached by at
// least one fixture (a testdata/<ID>/fail*.yaml, or an irFixtures / irBranches entry for
// what fleet.yaml cannot express). A branch no fixture reaches is a branch a mutant survives in.
func TestEveryReportReached(t *testing.T) {
	sites := reportSites(t)
	hit := map[string][]int{} // base file name → traced lines
	traceReport = func(file string, line int) {
		hit[filepath.Base(file)] = append(hit[filepath.Base(file)], line)
	}
	defer func() { traceReport = nil }()

	for name, fn := range irBranches {
		t.Run("branch/"+name, fn)
	}
	for _, r := range Rules() {
		if fn, ok := irFixtures[r.ID]; ok {
			t.Run("ir/"+r.ID, fn)
		}
		for _, p := range failFixtures(t, r.ID) {
			load(t, r.ID+"/"+filepath.Base(p), mustRead(t, p))
		}
	}
	var missed []string
	for _, s := range sites {
		reached := false
		for _, l := range hit[s.file] {
			if l >= s.from && l <= s.to {
				reached = true
				break
			}
		}
		if !reached {
			missed = append(missed, fmt.Sprintf("%s:%d (%s)", s.file, s.from, s.fn))
		}
	}
	covered := 100 * float64(len(sites)-len(missed)) / float64(len(sites))
	t.Logf("%d of %d report calls reached by fixtures (%.1f %%)", len(sites)-len(missed), len(sites), covered)
	for _, m := range missed {
		t.Errorf("no fixture reaches the report call at %s: add a testdata/<ID>/fail-<case>.yaml", m)
	}
}

type reportSite struct {
	file, fn string
	from, to int
}

// reportSites finds every r.Add / r.Warn call in the package's non-test files.
func reportSites(t *testing.T) []reportSite {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var sites []reportSite
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Add" && sel.Sel.Name != "Warn") {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "r" {
					return true
				}
				sites = append(sites, reportSite{
					file: name, fn: fd.Name.Name,
					from: fset.Position(call.Pos()).Line, to: fset.Position(call.End()).Line,
				})
				return true
			})
		}
	}
	if len(sites) < 50 {
		t.Fatalf("found only %d report calls; has the Reporter API changed?", len(sites))
	}
	return sites
}
