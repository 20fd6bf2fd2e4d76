package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fleetc/fleetc/spec"
)

// errNotAtRevision: the revision exists, the file did not exist in it (a spec new in the pull
// request).
var errNotAtRevision = errors.New("the file does not exist at that revision")

// gitSafety are the options of every git fleetc runs. A pull request can commit files that
// look like a repository (HEAD, objects/, refs/, config) next to the spec: git must not
// discover such a bare repository by itself, nor run a file-system monitor a config names.
var gitSafety = []string{"-c", "safe.bareRepository=explicit", "-c", "core.fsmonitor=false"}

// repo is the git repository of the working directory, named explicitly to every later git.
type repo struct{ gitDir, top string }

// gitRun runs git with the safety options (and the repository's --git-dir and --work-tree
// when r is known) in the working directory.
func gitRun(r *repo, args ...string) *exec.Cmd {
	all := append([]string{}, gitSafety...)
	if r != nil {
		all = append(all, "--git-dir="+r.gitDir, "--work-tree="+r.top)
	}
	return exec.Command("git", append(all, args...)...)
}

// workRepo is the repository the working directory belongs to: the checkout CI runs in, not
// whatever a directory near the spec looks like.
func workRepo() (*repo, error) {
	out, err := gitRun(nil, "rev-parse", "--absolute-git-dir", "--show-toplevel").Output()
	if err != nil {
		return nil, fmt.Errorf("the working directory is not in a git work tree: %w", gitErr(err))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("git rev-parse answered %q", out)
	}
	top, err := filepath.EvalSymlinks(lines[1])
	if err != nil {
		return nil, err
	}
	return &repo{gitDir: lines[0], top: top}, nil
}

var objectID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// gitShow reads a file as it was at a git revision of the working directory's repository,
// without touching the work tree. The file must lie in that work tree.
func gitShow(ref, path string) (name string, src []byte, err error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, ":\x00\n") {
		return "", nil, fmt.Errorf("%q is not a git revision", ref)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", nil, errors.New("reading a spec at a git revision needs git on PATH")
	}
	r, err := workRepo()
	if err != nil {
		return "", nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, err
	}
	rel, err := filepath.Rel(r.top, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", nil, fmt.Errorf("%s is outside the git work tree %s of the working directory; run fleetc from the checkout that holds the spec", path, r.top)
	}
	rel = filepath.ToSlash(rel)
	name = ref + ":" + rel
	out, err := gitRun(r, "rev-parse", "--verify", "--quiet", "--end-of-options", name).Output()
	id := strings.TrimSpace(string(out))
	if err != nil || !objectID.MatchString(id) {
		if gitRun(r, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}").Run() == nil {
			// The revision exists; the file did not exist in it (a spec new in the pull request).
			return name, nil, errNotAtRevision
		}
		return "", nil, fmt.Errorf("reading %s at %s: no such revision or file", rel, ref)
	}
	cmd := gitRun(r, "cat-file", "blob", id)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	src, rerr := spec.ReadLimited(stdout, name)
	if rerr != nil {
		_ = cmd.Process.Kill()
	}
	werr := cmd.Wait()
	switch {
	case rerr != nil:
		return "", nil, rerr
	case werr != nil:
		return "", nil, fmt.Errorf("reading %s at %s: %s", rel, ref, strings.TrimSpace(stderr.String()))
	}
	return name, src, nil
}

func gitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return errors.New(strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
