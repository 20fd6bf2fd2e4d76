package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// errNotAtRevision: the revision exists, the file did not exist in it (a spec new in the pull
// request).
var errNotAtRevision = errors.New("the file does not exist at that revision")

// gitShow reads a file as it was at a git revision of the repository holding it, without
// touching the work tree.
func gitShow(ref, path string) (name string, src []byte, err error) {
	if strings.HasPrefix(ref, "-") {
		return "", nil, fmt.Errorf("%q is not a git revision", ref)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", nil, errors.New("reading a spec at a git revision needs git on PATH")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Dir(abs)
	top, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s is not in a git repository: %w", path, gitErr(err))
	}
	root, _ := filepath.EvalSymlinks(strings.TrimSpace(string(top)))
	real, _ := filepath.EvalSymlinks(abs)
	rel, err := filepath.Rel(root, real)
	if err != nil {
		return "", nil, err
	}
	rel = filepath.ToSlash(rel)
	out, err := exec.Command("git", "-C", root, "show", ref+":"+rel).Output()
	if err != nil && exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Run() == nil &&
		exec.Command("git", "-C", root, "cat-file", "-e", ref+":"+rel).Run() != nil {
		return ref + ":" + rel, nil, errNotAtRevision
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading %s at %s: %w", rel, ref, gitErr(err))
	}
	name = ref + ":" + rel
	src, err = limitedRead(bytes.NewReader(out), name)
	return name, src, err
}

func gitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return errors.New(strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
