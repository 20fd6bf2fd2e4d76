// Package onefact holds the repository's one-definition guards: facts and vocabularies that
// once lived in several places, and now have one definition each, must not grow a copy again
// in product code (non-test Go files).
package onefact

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// productFiles parses every non-test Go file of the module, testdata and tools excepted.
func productFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]*ast.File{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || name == "bin" || strings.HasPrefix(name, ".") || p == filepath.Join(root, "tools")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found %d product files: the walk is broken", len(out))
	}
	return out
}

// TestOneDefinition: each fact below is written in exactly one place; a second spelling in
// product code fails here, naming where. AWS limits are held by value instead
// (TestLimitsDefinedOnce, limits_test.go).
func TestOneDefinition(t *testing.T) {
	files := productFiles(t)
	literals := map[string][]string{} // string literal -> files
	for path, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					literals[s] = append(literals[s], path)
				}
			}
			return true
		})
	}
	src := map[string]string{}
	for path := range files {
		b, err := os.ReadFile(filepath.Join("../..", path))
		if err != nil {
			t.Fatal(err)
		}
		src[path] = string(b)
	}
	for _, c := range []struct {
		fact string
		re   *regexp.Regexp
		home string // the one file allowed to match
	}{
		{"JSON-pointer escaping (spec/jsonptr)", regexp.MustCompile(`"~[01]"`), "spec/jsonptr/jsonptr.go"},
		{"the spec size limit (spec.MaxFileBytes)", regexp.MustCompile(`MaxFileBytes\s*=`), "spec/load.go"},
		{"the visibility margin 1.5 × step.max (ir.VisibilityFor)", regexp.MustCompile(`\* ?3 ?/ ?2\b|\b1\.5 ?\*|\* ?1\.5\b`), "compiler/ir/defaults.go"},
		{"the severity vocabulary (diag.Severity)", regexp.MustCompile(`Severity:\s*"`), ""},
		{"go-cmp, which is for tests", regexp.MustCompile(`"github\.com/google/go-cmp`), ""},
	} {
		var where []string
		for path, s := range src {
			if c.re.MatchString(s) && path != c.home && !strings.HasPrefix(path, "internal/verifytest/") {
				where = append(where, path)
			}
		}
		if len(where) > 0 {
			sort.Strings(where)
			t.Errorf("%s is defined again in %v", c.fact, where)
		}
		if c.home != "" && !c.re.MatchString(src[c.home]) {
			t.Errorf("%s: its definition left %s; update this guard", c.fact, c.home)
		}
	}
	// Dead-letter codes are wire.Code constants: no package spells one as a string. A few
	// words are also other systems' vocabulary, where the literal is theirs.
	theirs := map[string][]string{
		"InvalidOutput": {"runtime/callback/callback.go"}, // Step Functions' SendTaskSuccess error code
		"Failed":        {"compiler/ir/names.go"},         // the <step>Failed state name suffix
		"Error": {
			"compiler/deploy/deploy.go", // Terraform's diagnostic severity, as printed
			"compiler/asl/approval.go",  // the Error field of a SendTaskFailure task's parameters
		},
	}
	codes := wireCodes(t, files["runtime/wire/codes.go"])
	if len(codes) < 40 {
		t.Fatalf("read %d codes from runtime/wire/codes.go", len(codes))
	}
	for _, code := range codes {
		for _, path := range literals[code] {
			if strings.HasPrefix(path, "runtime/wire/") || slices.Contains(theirs[code], path) {
				continue
			}
			t.Errorf("%s spells dead-letter code %q as a string; use wire's constant", path, code)
		}
	}
}

// wireCodes lists the values of the wire.Code constants.
func wireCodes(t *testing.T, f *ast.File) []string {
	if f == nil {
		t.Fatal("runtime/wire/codes.go not found")
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
	}
	return out
}
