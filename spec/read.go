package spec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ReadFile is the one way fleetc reads a spec from disk, for every command. A spec may come
// from a fork's pull request, so it refuses what a file in a checkout has no business being:
// a path that resolves, through symlinks, outside the working directory (a link to
// /proc/self/environ, a kubeconfig or a .env would print secrets in diagnostics), and
// anything but a regular file (/dev/zero and a FIFO would be read forever). It opens
// without blocking and without following a final symlink, checks the open file with fstat,
// and reads at most MaxFileBytes.
func ReadFile(path string) ([]byte, error) {
	real, err := resolveInTree(path)
	if err != nil {
		return nil, err
	}
	f, err := openNoFollow(real)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	if fi.IsDir() {
		return nil, &NotSpecError{Path: path, Why: "is a directory, not a fleet.yaml file"}
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotSpecError{Path: path, Why: fmt.Sprintf("is not a regular file (%s)", kind(fi.Mode()))}
	}
	return ReadLimited(f, path)
}

// NotSpecError is a path that names something other than a spec file fleetc may read.
type NotSpecError struct{ Path, Why string }

func (e *NotSpecError) Error() string { return e.Path + " " + e.Why }

// ReadLimited reads a spec from r, refusing one larger than MaxFileBytes; name is for the error.
func ReadLimited(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", name, unwrapPathError(err))
	}
	if len(b) > MaxFileBytes {
		return nil, &NotSpecError{Path: name, Why: fmt.Sprintf("is larger than %d MiB; fleet specs are limited to %d bytes", MaxFileBytes>>20, MaxFileBytes)}
	}
	return b, nil
}

// resolveInTree resolves path's symlinks. A path with no symlink may be anywhere (the user
// named it); one that goes through a symlink, in its last element or a directory, must end
// inside the working directory, since a checked-out link is chosen by whoever wrote the
// commit.
func resolveInTree(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	if real == abs {
		return real, nil
	}
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	if within(wd, real) {
		return real, nil
	}
	return "", &NotSpecError{Path: path, Why: "is a symlink that leads outside the working directory " + wd + "; fleetc does not follow it (a spec in a pull request could point at secrets)"}
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	}
	return m.Type().String()
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
