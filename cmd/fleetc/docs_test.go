package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fleetc/fleetc/cmd/fleetc/cli"
	"github.com/fleetc/fleetc/internal/verifytest"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"fleetc": func() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// docsWithCommands are the documents whose ```console blocks are run: every "$ command"
// line, with the lines after it its expected output (stdout and stderr together). In the
// expected output "…" stands for text that differs between runs (a digest, a duration): on
// a line it matches any text, and a line that is only "…" matches any number of lines.
// docs/dev.md's run a fleetc dev session on kumo: TestDevDoc.
var docsWithCommands = []string{"README.md", "docs/quickstart.md", "docs/environments.md", "docs/simulate.md", "docs/approvals.md"}

// TestDocs turns each document's console blocks into a testscript and runs it in a fresh
// directory, with fleetc on PATH: the docs show what the commands print today.
func TestDocs(t *testing.T) {
	dir := t.TempDir()
	var images *imageRegistry
	for _, doc := range docsWithCommands {
		md := writeDocScript(t, dir, doc, 2)
		if doc == quickstartDoc {
			images = startImageRegistry(t, md)
		}
	}
	// fleetc invoke runs fleet-worker (its dry-run) as a process: one built from this
	// checkout is on the scripts' PATH, as beside an installed fleetc.
	bin := workerDir(t)
	testscript.Run(t, testscript.Params{Dir: dir, Cmds: docCmds, Setup: func(e *testscript.Env) error {
		e.Setenv("PATH", bin+string(os.PathListSeparator)+e.Getenv("PATH"))
		// Commands in the docs name the repository's examples (and docs/simulate's fleet and
		// scenarios), as from a clone's root.
		if err := os.CopyFS(filepath.Join(e.WorkDir, "docs", "simulate"), os.DirFS("../../docs/simulate")); err != nil {
			return err
		}
		// The quickstart's image commands reach a registry (docsimage_test.go).
		if strings.HasSuffix(e.T().(testing.TB).Name(), "/"+scriptName(quickstartDoc)) {
			if err := images.setup(e); err != nil {
				return err
			}
		}
		return os.CopyFS(filepath.Join(e.WorkDir, "examples"), os.DirFS("../../examples"))
	}})
}

// writeDocScript writes doc's testscript (consoleScript) into dir, fails the test unless it
// has at least min commands, and returns the document's text.
func writeDocScript(t *testing.T, dir, doc string, min int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", doc))
	if err != nil {
		t.Fatal(err)
	}
	script, n, err := consoleScript(string(b))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	if n < min {
		t.Fatalf("%s: only %d commands found", doc, n)
	}
	if err := os.WriteFile(filepath.Join(dir, scriptName(doc)+".txtar"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docCmds are the commands the documents' scripts use beside testscript's own.
var docCmds = map[string]func(*testscript.TestScript, bool, []string){"cmpdoc": cmpDoc}

// scriptName is the name of doc's testscript, and of its subtest.
func scriptName(doc string) string {
	return strings.ReplaceAll(doc, "/", "_")
}

// workerDir is a directory holding only fleet-worker built from this checkout (TestDocs and
// TestDevDoc run in parallel; one build serves both).
func workerDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(verifytest.GoBinary(t, verifytest.WorkerPkg))
}

// consoleScript is a testscript for the console blocks of a markdown document: `cd` is
// testscript's own, every other command runs under sh with stderr merged into stdout, and
// its output is compared with the lines the document shows after it.
//
// A session as a shell user runs it: `$ CMD &` starts CMD in the background (job %1, %2, …),
// `$ kill -INT %N` is Ctrl-C to job N, and `$ wait` waits for the jobs, fails unless each
// exited 0, and compares what they printed with the lines after it. A job is CMD itself
// (sh execs it, merging its stderr), so the signal reaches it as Ctrl-C would.
func consoleScript(md string) (script string, n int, err error) {
	var b, files strings.Builder
	in, jobs, quiet := false, 0, ""
	var want *strings.Builder
	flush := func() {
		if want == nil {
			return
		}
		name := fmt.Sprintf("want/%d", n)
		fmt.Fprintf(&b, "cmpdoc stdout $WORK/%s\n", name)
		fmt.Fprintf(&files, "-- %s --\n%s", name, want.String())
		want = nil
	}
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case line == "```console":
			in = true
		case in && line == "```":
			flush()
			in, quiet = false, ""
		case in && strings.HasPrefix(line, "$ "):
			flush()
			cmd := strings.TrimPrefix(line, "$ ")
			// A line that ends in a backslash goes on on the next one, as the shell reads it.
			for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, "\\") + lines[i]
			}
			n++
			quiet = ""
			fmt.Fprintf(&b, "# %s\n", cmd)
			if dir, ok := strings.CutPrefix(cmd, "cd "); ok {
				fmt.Fprintf(&b, "cd %s\n", dir)
				continue
			}
			if bg, ok := strings.CutSuffix(cmd, " &"); ok {
				jobs++
				fmt.Fprintf(&b, "exec sh -c 'exec %s 2>&1' &job%d&\n", strings.ReplaceAll(bg, "'", "''"), jobs)
				quiet = "a background command's output goes after `$ wait`"
				continue
			}
			if job, ok := strings.CutPrefix(cmd, "kill -INT %"); ok {
				fmt.Fprintf(&b, "kill -INT job%s\n", job)
				quiet = "kill prints nothing"
				continue
			}
			if cmd == "wait" {
				b.WriteString("wait\n")
				want = &strings.Builder{}
				continue
			}
			// The document shows output, not exit codes: `|| true` keeps a failing command
			// (a diagnostic) running; its output is still compared.
			fmt.Fprintf(&b, "exec sh -c '( %s ) 2>&1 || true'\n", strings.ReplaceAll(cmd, "'", "''")) // testscript quotes ' as ''
			want = &strings.Builder{}
		case in && quiet != "":
			return "", n, fmt.Errorf("line %d: %s", i+1, quiet)
		case in && want != nil:
			want.WriteString(line + "\n")
		}
	}
	return b.String() + files.String(), n, nil
}

// cmpDoc is testscript's cmp for a document's expected output: `cmpdoc stdout FILE` fails
// unless the last command's stdout matches FILE, where "…" is a wildcard (docMatch). A
// script that checks more after its commands (the quickstart's pushed image) gets their
// outputs.
func cmpDoc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || args[0] != "stdout" {
		ts.Fatalf("usage: cmpdoc stdout FILE")
	}
	got, want := ts.ReadFile("stdout"), ts.ReadFile(args[1])
	if outputs, ok := ts.Value(docOutputsKey{}).(*[]string); ok {
		*outputs = append(*outputs, got)
	}
	if !docMatch(want, got) {
		ts.Fatalf("output differs from the document:\n--- document\n%s--- got\n%s", want, got)
	}
}

// docMatch reports whether got matches the expected output want line by line: "…" inside
// a line matches any text on that line, and a line that is only "…" any number of lines
// (none included). Without "…" it is plain equality.
func docMatch(want, got string) bool {
	if !strings.Contains(want, "…") {
		return want == got
	}
	var re strings.Builder
	re.WriteString(`\A`)
	for _, line := range strings.SplitAfter(want, "\n") {
		if line == "" {
			continue
		}
		body, nl := strings.CutSuffix(line, "\n")
		if body == "…" {
			re.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		parts := strings.Split(body, "…")
		for i, p := range parts {
			if i > 0 {
				re.WriteString(`[^\n]*`)
			}
			re.WriteString(regexp.QuoteMeta(p))
		}
		if nl {
			re.WriteString(`\n`)
		}
	}
	re.WriteString(`\z`)
	return regexp.MustCompile(re.String()).MatchString(got)
}

// The user docs name only files that exist: an examples/... path written in README.md or
// docs/**/*.md resolves to a file or directory of the checkout (the README once cited
// examples/bad.yaml, which did not exist), and every relative markdown link resolves too,
// its #anchor to a heading of the target (docs/dev.md once linked a README anchor that was
// not there). Other paths in the docs are often generated ones (out/runtime/<class>.json),
// so they are not checked here.
func TestDocsCiteExistingFiles(t *testing.T) {
	docs := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	repoPath := regexp.MustCompile("(?:^|[\\s`(\\[])(examples/[A-Za-z0-9_.\\-/]*[A-Za-z0-9_])")
	checked, anchors := 0, 0
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
		for _, l := range relativeLinks(string(b)) {
			checked++
			target := doc
			if l.path != "" {
				target = filepath.Join(filepath.Dir(doc), l.path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %s, which does not exist", doc, l.path)
				continue
			}
			if l.anchor == "" {
				continue
			}
			anchors++
			md, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s links %s#%s: %v", doc, l.path, l.anchor, err)
			} else if !headingAnchors(string(md))[l.anchor] {
				t.Errorf("%s links %s#%s: %s has no heading with that anchor", doc, l.path, l.anchor, target)
			}
		}
	}
	t.Logf("%d documents, %d paths and links, %d anchors checked", len(docs), checked, anchors)
	if checked < 50 || anchors < 20 {
		t.Errorf("only %d paths and %d anchors checked", checked, anchors)
	}
}

// docLink is a relative markdown link: a path (empty for the document itself) and an
// optional anchor.
type docLink struct{ path, anchor string }

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]*)\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
	fence    = regexp.MustCompile("^\\s*(```|~~~)")
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// relativeLinks lists the links of md outside code blocks that are not URLs (no scheme).
func relativeLinks(md string) []docLink {
	var links []docLink
	for _, line := range proseLines(md) {
		line = codeSpan.ReplaceAllString(line, "") // a link inside `code` does not render
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if target == "" || strings.Contains(strings.SplitN(target, "#", 2)[0], ":") {
				continue // an absolute URL (https:, mailto:)
			}
			path, anchor, _ := strings.Cut(target, "#")
			links = append(links, docLink{path, anchor})
		}
	}
	return links
}

// proseLines are md's lines outside fenced code blocks, where links and headings render.
func proseLines(md string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		if !in {
			out = append(out, line)
		}
	}
	return out
}

// headingAnchors is the set of anchors GitHub gives md's headings: the heading's rendered
// text lowercased, spaces turned into '-', other punctuation than '-' and '_' dropped, and
// a repeated anchor suffixed -1, -2, ...
func headingAnchors(md string) map[string]bool {
	seen := map[string]int{}
	set := map[string]bool{}
	for _, line := range proseLines(md) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := headingSlug(m[1])
		if n := seen[slug]; n > 0 {
			set[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			set[slug] = true
		}
		seen[slug]++
	}
	return set
}

// inlineLink is a markdown link or image inside a heading; only its text renders.
var inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

func headingSlug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The anchors GitHub renders for headings like the docs' own (as seen on github.com).
func TestHeadingAnchors(t *testing.T) {
	md := "# Deploying: plan, apply, destroy\n### A local emulator: `--endpoint`\n" +
		"```sh\n# not a heading\n```\n## Dead letters: triage, fix, canary, redrive\n" +
		"## See [the spec](spec.md) & fleet_yaml\n## Example\n## Example\n## Example\n"
	got := headingAnchors(md)
	want := []string{"deploying-plan-apply-destroy", "a-local-emulator---endpoint",
		"dead-letters-triage-fix-canary-redrive", "see-the-spec--fleet_yaml", "example", "example-1", "example-2"}
	for _, a := range want {
		if !got[a] {
			t.Errorf("no anchor %q in %v", a, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("anchors = %v, want %v", got, want)
	}
}

func TestDocMatch(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb\n", "a\nb\n", true},
		{"a\nb\n", "a\nc\n", false},
		{"a.b\n", "axb\n", false}, // no regexp leaks through
		{"digest sha256:…, 4 layers\n", "digest sha256:abc, 4 layers\n", true},
		{"digest sha256:…, 4 layers\n", "digest sha256:abc, 5 layers\n", false},
		{"… in 9.4s\n", "pushed\nx in 9.4s\n", false}, // … inside a line never spans lines
		{"first\n…\nlast\n", "first\nlast\n", true},
		{"first\n…\nlast\n", "first\none\ntwo\nlast\n", true},
		{"first\n…\nlast\n", "first\none\n", false},
		{"a …\n", "a b\nextra\n", false},
	} {
		if got := docMatch(c.want, c.got); got != c.ok {
			t.Errorf("docMatch(%q, %q) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
}

// A command continued with a trailing backslash is one command, joined as the shell joins it,
// and its output follows its last line.
func TestConsoleScriptContinuation(t *testing.T) {
	md := "```console\n$ fleetc image build f.yaml c --base b \\\n  --push\nout\n$ (cd x && ls)\n```\n"
	script, n, err := consoleScript(md)
	want := "# fleetc image build f.yaml c --base b   --push\n" +
		"exec sh -c '( fleetc image build f.yaml c --base b   --push ) 2>&1 || true'\n" +
		"cmpdoc stdout $WORK/want/1\n" +
		"# (cd x && ls)\nexec sh -c '( (cd x && ls) ) 2>&1 || true'\n" +
		"cmpdoc stdout $WORK/want/2\n" +
		"-- want/1 --\nout\n-- want/2 --\n"
	if err != nil || n != 2 || script != want {
		t.Errorf("consoleScript = %d commands:\n%s\nwant 2:\n%s", n, script, want)
	}
}

// A console session with a background job: `&`, `kill -INT %N` and `wait` become testscript's
// background exec (sh execs the command itself, so the signal reaches it), kill and wait,
// and what the job printed is compared after `$ wait`. Output written under a background
// command or a kill is refused: the document would show it where the test cannot check it.
func TestConsoleScriptJobs(t *testing.T) {
	md := "```console\n$ fleetc dev it's/fleet.yaml &\n$ fleetc dev status --wait 1m\nup\n$ kill -INT %1\n$ wait\nbye\n```\n"
	script, n, err := consoleScript(md)
	if err != nil || n != 4 {
		t.Fatalf("consoleScript: %d commands, %v", n, err)
	}
	for _, want := range []string{
		"exec sh -c 'exec fleetc dev it''s/fleet.yaml 2>&1' &job1&\n# fleetc dev status --wait 1m\nexec sh -c '( fleetc dev status --wait 1m ) 2>&1 || true'\ncmpdoc stdout $WORK/want/2\n",
		"kill -INT job1\n# wait\nwait\ncmpdoc stdout $WORK/want/4\n",
		"-- want/2 --\nup\n-- want/4 --\nbye\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	for _, md := range []string{"```console\n$ fleetc dev f.yaml &\nstarting\n```\n", "```console\n$ kill -INT %1\n^C\n```\n"} {
		if _, _, err := consoleScript(md); err == nil {
			t.Errorf("consoleScript(%q) took output under a background command or kill", md)
		}
	}
}
