package verifytest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ProcessTempDir makes a temporary directory that lives as long as the test process, named
// prefix-PID-*, for what a process shares across its tests (built binaries, a Terraform CLI
// config). t.TempDir cannot hold those, and a test binary has no hook that runs after its
// last test in every package, so it first removes the prefix-PID-* directories of processes
// that have exited: each run of the suite left ~100 MB of binaries in the temp directory.
func ProcessTempDir(prefix string) (string, error) {
	reapProcessDirs(os.TempDir(), prefix)
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s-%d-", prefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	return dir, nil
}

// reapProcessDirs removes root's prefix-PID-* directories whose process no longer runs.
func reapProcessDirs(root, prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(root, prefix+"-*-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), prefix+"-"), "-", 2)[0])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		// Signal 0 checks that the process exists. EPERM means it does, under another user.
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}
