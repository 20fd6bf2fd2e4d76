package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/fleetc/fleetc/spec"
)

func newFmtCmd(s *streams) *cobra.Command {
	var check bool
	c := &cobra.Command{
		Annotations: noSpec,
		Use:         "fmt [--check] FILE...",
		Short:       "Format fleet.yaml files in place, keeping comments",
		Long: `Fmt rewrites each fleet.yaml in one layout: two-space indentation, block style where the
file used block style, flow style ({ ... }, [ ... ]) where it used flow style. Comments, key
order, anchors and values are kept; only layout changes.

Arguments:
  FILE...  the fleet.yaml files to format

--check writes nothing: it lists the files that are not formatted and exits 1 (a CI gate,
like gofmt -l and terraform fmt -check).`,
		Example: `  fleetc fmt fleet/fleet.yaml
  fleetc fmt --check fleet/fleet.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runFmt(args, check, s.stdout, s.stderr))
		},
	}
	c.Flags().BoolVar(&check, "check", false, "list files that are not formatted and exit 1; write nothing")
	return c
}

func runFmt(files []string, check bool, stdout, stderr io.Writer) int {
	code := exitOK
	for _, f := range files {
		src, err := spec.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc fmt: %v\n", err)
			return exitUsage
		}
		out, err := formatYAML(src)
		if err != nil {
			// Formatting never guesses at a file it cannot parse: validate says where.
			fmt.Fprintf(stderr, "fleetc fmt: %s: %v (fleetc validate %s shows where)\n", f, err, f)
			return exitInvalid
		}
		if bytes.Equal(out, src) {
			continue
		}
		if check {
			fmt.Fprintln(stdout, f)
			code = exitInvalid
			continue
		}
		fi, err := os.Stat(f)
		if err == nil {
			err = os.WriteFile(f, out, fi.Mode().Perm())
		}
		if err != nil {
			fmt.Fprintf(stderr, "fleetc fmt: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "formatted %s\n", f)
	}
	return code
}

// formatYAML re-encodes a YAML document through yaml.v3's node tree, which carries the
// comments, styles, anchors and key order, with two-space indentation.
func formatYAML(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 { // an empty file stays empty
		return src, nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return keepBlankLines(src, &doc, b.Bytes())
}

// keepBlankLines puts back the blank lines that separated mapping entries in src: yaml.v3's
// node tree has no place for them, and a spec's sections read better apart. The formatted
// text is parsed again and walked beside the original tree (same keys, same order).
func keepBlankLines(src []byte, orig *yaml.Node, out []byte) ([]byte, error) {
	var again yaml.Node
	if err := yaml.Unmarshal(out, &again); err != nil {
		return nil, err
	}
	srcLines := strings.Split(string(src), "\n")
	blank := map[int]bool{} // 1-based lines of out to put a blank line before
	var walk func(a, b *yaml.Node)
	walk = func(a, b *yaml.Node) {
		if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
			return
		}
		for i := range a.Content {
			if a.Kind == yaml.MappingNode && i%2 == 0 {
				start := a.Content[i].Line - commentLines(a.Content[i].HeadComment)
				if start >= 2 && strings.TrimSpace(srcLines[start-2]) == "" {
					blank[b.Content[i].Line-commentLines(b.Content[i].HeadComment)] = true
				}
			}
			walk(a.Content[i], b.Content[i])
		}
	}
	walk(orig, &again)
	var w bytes.Buffer
	for i, l := range strings.SplitAfter(string(out), "\n") {
		if blank[i+1] && i > 0 {
			w.WriteString("\n")
		}
		w.WriteString(l)
	}
	return w.Bytes(), nil
}

func commentLines(c string) int {
	if c == "" {
		return 0
	}
	return strings.Count(c, "\n") + 1
}
