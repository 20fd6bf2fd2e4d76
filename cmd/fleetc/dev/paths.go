package dev

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ImageHandlerDir is where the class image keeps its handler (examples/images/python's
// Dockerfile copies handler/ there), and ProjectHandlerDir the project directory fleetc init
// writes it in, beside the spec's directory: the default mapping dev and invoke use.
const (
	ImageHandlerDir   = "/app"
	ProjectHandlerDir = "handler"
)

// PathMapping maps a directory of the class image to a local one.
type PathMapping struct{ Image, Local string }

// PathMap is what dev and invoke substitute in an exec handler's command, so a handler the
// image runs from /app runs from the project's checkout instead; the spec (and so what AWS
// gets) is not changed. The longest Image prefix wins.
type PathMap []PathMapping

func (m PathMap) String() string {
	parts := make([]string, len(m))
	for i, p := range m {
		parts[i] = p.Image + " → " + p.Local
	}
	return strings.Join(parts, ", ")
}

// ParsePathMap reads `--path IMAGE=LOCAL` flags: IMAGE absolute, LOCAL an existing directory
// (relative to the working directory).
func ParsePathMap(flags []string) (PathMap, error) {
	var m PathMap
	for _, f := range flags {
		img, local, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(img, "/") || local == "" {
			return nil, fmt.Errorf("--path %q: want IMAGE_DIR=LOCAL_DIR, IMAGE_DIR absolute (e.g. /app=handler)", f)
		}
		abs, err := filepath.Abs(local)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--path %s: %s is not a directory", f, local)
		}
		m = append(m, PathMapping{Image: filepath.Clean(img), Local: abs})
	}
	return m, nil
}

// ResolvePathMap is the mapping dev and invoke use: the --path flags when any, else
// DefaultPathMap.
func ResolvePathMap(specPath string, flags []string) (PathMap, error) {
	if len(flags) > 0 {
		return ParsePathMap(flags)
	}
	return DefaultPathMap(specPath), nil
}

// DefaultPathMap is fleetc init's layout: spec in <project>/fleet/, handler in
// <project>/handler/, copied to /app in the image. It looks beside the spec's directory, then
// in it; none found, no mapping.
func DefaultPathMap(specPath string) PathMap {
	specDir, err := filepath.Abs(filepath.Dir(specPath))
	if err != nil {
		return nil
	}
	for _, dir := range []string{filepath.Dir(specDir), specDir} {
		p := filepath.Join(dir, ProjectHandlerDir)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return PathMap{{Image: ImageHandlerDir, Local: p}}
		}
	}
	return nil
}

// Command returns the handler's command with every argument under a mapped image directory
// rewritten to its local path, when that local path exists (a file the project does not
// have stays as it is, and is reported as not on this machine).
func (m PathMap) Command(cmd []string) []string {
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = m.local(arg)
	}
	return out
}

// Local is Command and the line dev prints about it: the command line it runs and, when it
// differs from the spec's, the mapping that made it so.
func (m PathMap) Local(cmd []string) ([]string, string) {
	out := m.Command(cmd)
	note := "handler runs as: " + CommandLine(out)
	var used PathMap
	for i := range cmd {
		if out[i] != cmd[i] {
			for _, p := range m {
				if strings.HasPrefix(cmd[i], p.Image) && strings.HasPrefix(out[i], p.Local) && !slices.Contains(used, p) {
					used = append(used, p)
				}
			}
		}
	}
	if len(used) > 0 {
		note += " (from the project: " + used.String() + "; the image runs " + CommandLine(cmd) + ")"
	}
	return out, note
}

// CommandLine is cmd as a shell would read it back: arguments with spaces or quotes quoted.
func CommandLine(cmd []string) string {
	parts := make([]string, len(cmd))
	for i, a := range cmd {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

func (m PathMap) local(arg string) string {
	best, bestLen := arg, -1
	for _, p := range m {
		rest, ok := strings.CutPrefix(arg, p.Image)
		if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) || len(p.Image) <= bestLen {
			continue
		}
		cand := filepath.Join(p.Local, rest)
		if _, err := os.Stat(cand); err != nil {
			continue
		}
		best, bestLen = cand, len(p.Image)
	}
	return best
}
