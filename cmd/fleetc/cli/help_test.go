package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/fleetc/fleetc/compiler/jsonreport"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/cli from the command tree")

const cliDocs = "../../../docs/cli"

// walk calls f for every available command under root, root included.
func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			walk(sub, f)
		}
	}
}

// Every command answers --help on stdout with exit 0: usage, arguments, examples.
func TestHelpEverywhere(t *testing.T) {
	root := newRoot(&streams{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	n := 0
	walk(root, func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		code, out, errs := run(t, append(path, "--help")...)
		if code != 0 || errs != "" || !strings.Contains(out, "Usage:\n  "+c.UseLine()) {
			t.Errorf("fleetc %s --help: exit %d, stderr %q, stdout:\n%s", strings.Join(path, " "), code, errs, out)
		}
		// fleetc's own commands (not cobra's help and completion) also show examples and,
		// when they take any, describe their arguments.
		if c.HasParent() && c.Root() == c.Parent() && c.Name() != "help" && c.Name() != "completion" || c.Parent() != nil && c.Parent().Name() == "schemas" {
			if c.Runnable() && !strings.Contains(out, "Examples:\n") {
				t.Errorf("fleetc %s --help shows no example", strings.Join(path, " "))
			}
			if strings.ContainsAny(c.Use, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && c.Name() != "schemas" && !strings.Contains(out, "Arguments:\n") {
				t.Errorf("fleetc %s --help does not describe its arguments", strings.Join(path, " "))
			}
		}
		n++
	})
	if n < 15 {
		t.Errorf("walked only %d commands", n)
	}
	// -h and `fleetc help CMD` say the same.
	_, long, _ := run(t, "explain", "--help")
	if _, short, _ := run(t, "explain", "-h"); short != long {
		t.Errorf("-h differs from --help")
	}
	if _, h, _ := run(t, "help", "explain"); h != long {
		t.Errorf("fleetc help explain differs from fleetc explain --help")
	}
}

func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_fleetc", "zsh": "#compdef fleetc", "fish": "complete -c fleetc", "powershell": "Register-ArgumentCompleter"} {
		code, out, errs := run(t, "completion", shell)
		if code != 0 || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, stderr %q, %d bytes without %q", shell, code, errs, len(out), marker)
		}
	}
	// Completing a flag value offers the allowed formats.
	code, out, _ := run(t, "__complete", "validate", "--format", "")
	if code != 0 || !strings.Contains(out, "json") {
		t.Errorf("format completion: exit %d\n%s", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"no-such-command"},
		{"validate", "--no-such-flag", "x.yaml"},
		{"validate", "--format", "xml", "x.yaml"},
		{"rules", "extra"},
		{"schemas"},
		{"schemas", "nope"},
		{"diff", "--fail-on", "everything", "a", "b"},
	} {
		code, out, errs := run(t, args...)
		if code != exitUsage || out != "" || errs == "" {
			t.Errorf("fleetc %v: exit %d (want 2), stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// docs/cli is generated from the command tree (cobra/doc); it must be what the code says.
//
//	go test ./cmd/fleetc/cli -run TestCLIReference -update
func TestCLIReference(t *testing.T) {
	dir := t.TempDir()
	root := newRoot(&streams{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		os.RemoveAll(cliDocs)
		if err := os.CopyFS(cliDocs, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob(filepath.Join(cliDocs, "*.md"))
	if len(have) != len(want) {
		t.Errorf("docs/cli has %d files, the command tree makes %d (go test ./cmd/fleetc/cli -run TestCLIReference -update)", len(have), len(want))
	}
	for _, w := range want {
		wb, _ := os.ReadFile(w)
		hb, err := os.ReadFile(filepath.Join(cliDocs, filepath.Base(w)))
		if err != nil || !bytes.Equal(hb, wb) {
			t.Errorf("docs/cli/%s is not current (go test ./cmd/fleetc/cli -run TestCLIReference -update)", filepath.Base(w))
		}
	}
}

// docs/cli.md's synopsis is the command tree's.
func TestCLIOverviewSynopsis(t *testing.T) {
	b, err := os.ReadFile("../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "```\n" + synopsis() + "```\n"; !strings.Contains(string(b), want) {
		t.Errorf("docs/cli.md does not show the synopsis as the commands define it; paste:\n%s", want)
	}
}

// Every JSON document carries the one integer format_version.
func TestRulesJSONFormatVersion(t *testing.T) {
	code, out, _ := run(t, "rules", "--format", "json")
	var doc struct {
		FormatVersion int `json:"format_version"`
		Rules         []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.FormatVersion != jsonreport.FormatVersion || len(doc.Rules) < 50 {
		t.Errorf("exit %d, %v: format_version %d, %d rules", code, err, doc.FormatVersion, len(doc.Rules))
	}
}

// fleetc rules is a table: every row's category, severity and summary start in one column.
func TestRulesAligned(t *testing.T) {
	_, out, _ := run(t, "rules")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var cols []int
	for _, l := range lines {
		f := strings.Fields(l)
		at := []int{strings.Index(l, " "+f[1]+" ") + 1}
		at = append(at, strings.Index(l[at[0]+len(f[1]):], f[2])+at[0]+len(f[1]))
		at = append(at, strings.Index(l[at[1]+len(f[2]):], f[3])+at[1]+len(f[2]))
		if cols == nil {
			cols = at
		} else if !slices.Equal(at, cols) {
			t.Errorf("misaligned row (columns at %v, first row's at %v):\n%s", at, cols, l)
		}
	}
	if !strings.Contains(out, "compatibility") {
		t.Error("no compatibility rule to check the widest category against")
	}
}

// docs/cli.md shows a real diagnostic of a file that exists, as fleetc prints it today.
func TestCLIDocDiagnosticIsReal(t *testing.T) {
	b, err := os.ReadFile("../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	const file = "compiler/ir/testdata/bad/undefined-model.yaml"
	code, _, errs := run(t, "validate", "../../../"+file)
	want := "$ fleetc validate " + file + "\n" + strings.ReplaceAll(errs, "../../../", "")
	if code != 1 || !strings.Contains(string(b), want) {
		t.Errorf("docs/cli.md does not show (exit %d):\n%s", code, want)
	}
}

// synopsis is one usage line per command, as docs/cli.md shows them.
func synopsis() string {
	var b strings.Builder
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			switch {
			case sub.Name() == "completion":
				var shells []string
				for _, sh := range sub.Commands() {
					shells = append(shells, sh.Name())
				}
				b.WriteString(sub.CommandPath() + " " + strings.Join(shells, "|") + "\n")
			case sub.HasSubCommands(): // a group: its subcommands are the usage (and its own, if it takes arguments)
				if sub.Runnable() && strings.Contains(sub.Use, " ") {
					b.WriteString(sub.UseLine() + "\n")
				}
				walk(sub)
			default:
				b.WriteString(sub.UseLine() + "\n")
			}
		}
	}
	walk(newRoot(&streams{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}))
	return b.String()
}
