package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fleetc/fleetc/cmd/fleetc/cli"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"fleetc": func() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// docsWithCommands are the documents whose ```console blocks are run: every "$ command"
// line, with the lines after it its expected output (stdout and stderr together).
var docsWithCommands = []string{"README.md", "docs/quickstart.md", "docs/environments.md", "docs/simulate.md"}

// TestDocs turns each document's console blocks into a testscript and runs it in a fresh
// directory, with fleetc on PATH: the docs show what the commands print today.
func TestDocs(t *testing.T) {
	dir := t.TempDir()
	for _, doc := range docsWithCommands {
		b, err := os.ReadFile(filepath.Join("../..", doc))
		if err != nil {
			t.Fatal(err)
		}
		script, n := consoleScript(string(b))
		if n < 2 {
			t.Fatalf("%s: only %d commands found", doc, n)
		}
		name := strings.ReplaceAll(doc, "/", "_") + ".txtar"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testscript.Run(t, testscript.Params{Dir: dir, Setup: func(e *testscript.Env) error {
		// Commands in the docs name the repository's examples (and docs/simulate's fleet and
		// scenarios), as from a clone's root.
		if err := os.CopyFS(filepath.Join(e.WorkDir, "docs", "simulate"), os.DirFS("../../docs/simulate")); err != nil {
			return err
		}
		return os.CopyFS(filepath.Join(e.WorkDir, "examples"), os.DirFS("../../examples"))
	}})
}

// consoleScript is a testscript for the console blocks of a markdown document: `cd` is
// testscript's own, every other command runs under sh with stderr merged into stdout, and
// its output is compared with the lines the document shows after it.
func consoleScript(md string) (string, int) {
	var script, files strings.Builder
	n := 0
	in := false
	var want *strings.Builder
	flush := func() {
		if want == nil {
			return
		}
		name := fmt.Sprintf("want/%d", n)
		fmt.Fprintf(&script, "cmp stdout $WORK/%s\n", name)
		fmt.Fprintf(&files, "-- %s --\n%s", name, want.String())
		want = nil
	}
	for _, line := range strings.Split(md, "\n") {
		switch {
		case line == "```console":
			in = true
		case in && line == "```":
			flush()
			in = false
		case in && strings.HasPrefix(line, "$ "):
			flush()
			cmd := strings.TrimPrefix(line, "$ ")
			n++
			if dir, ok := strings.CutPrefix(cmd, "cd "); ok {
				fmt.Fprintf(&script, "cd %s\n", dir)
				continue
			}
			// The document shows output, not exit codes: `|| true` keeps a failing command
			// (a diagnostic) running; its output is still compared.
			fmt.Fprintf(&script, "# %s\nexec sh -c '(%s) 2>&1 || true'\n", cmd, strings.ReplaceAll(cmd, "'", "''")) // testscript quotes ' as ''

			want = &strings.Builder{}
		case in && want != nil:
			want.WriteString(line + "\n")
		}
	}
	return script.String() + files.String(), n
}

// The user docs name only files that exist: an examples/... path written in README.md or
// docs/*.md, and every relative markdown link, resolves to a file or directory of the
// checkout (the README once cited examples/bad.yaml, which did not exist). Other paths in the
// docs are often generated ones (out/runtime/<class>.json), so they are not checked here.
func TestDocsCiteExistingFiles(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md")
	repoPath := regexp.MustCompile("(?:^|[\\s`(\\[])(examples/[A-Za-z0-9_.\\-/]*[A-Za-z0-9_])")
	link := regexp.MustCompile(`\]\(([^)#:\s]+)(?:#[^)]*)?\)`)
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range repoPath.FindAllStringSubmatch(string(b), -1) {
			p := strings.TrimSuffix(m[1], ".")
			if strings.ContainsAny(p, "<>*") || strings.Contains(p, "...") {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, p)
			}
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), m[1])); err != nil {
				t.Errorf("%s links %s, which does not exist", doc, m[1])
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d paths checked", checked)
	}
}
