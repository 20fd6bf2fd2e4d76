package verifytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mermaid parses a mermaid file with mermaid's own parser (tools/mermaid/parse.mjs, the
// parser GitHub's renderer runs).
func Mermaid(file string) error {
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("verify: mermaid: %w", err)
	}
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	script := filepath.Join(root, "tools", "mermaid", "parse.mjs")
	if _, err := os.Stat(filepath.Join(root, "tools", "mermaid", "node_modules", "mermaid")); err != nil {
		return fmt.Errorf("%w: mermaid parser not installed in tools/mermaid; %s", ErrToolMissing, installHint)
	}
	node, err := Tool("node")
	if err != nil {
		return err
	}
	out, code, err := run(context.Background(), nil, "", node, script, file)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("mermaid %s: invalid:\n%s", file, strings.TrimSpace(out))
	}
	return nil
}

// DOT parses a Graphviz file with dot itself (Debian's graphviz package).
func DOT(file string) error {
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("verify: dot: %w", err)
	}
	dot, err := Tool("dot")
	if err != nil {
		return err
	}
	out, code, err := run(context.Background(), nil, "", dot, "-Tsvg", "-o", os.DevNull, file)
	if err != nil {
		return err
	}
	if code != 0 || strings.Contains(out, "syntax error") {
		return fmt.Errorf("dot %s: invalid (exit %d):\n%s", file, code, strings.TrimSpace(out))
	}
	return nil
}
