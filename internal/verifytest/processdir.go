package verifytest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// processLockName is the file each ProcessTempDir holds an exclusive flock on for as long as
// its process runs.
const processLockName = ".owner.lock"

// held keeps the lock files open (an *os.File closes its descriptor, and so drops its lock,
// when it is collected).
var (
	heldMu sync.Mutex
	held   []*os.File
)

// ProcessTempDir makes a temporary directory that lives as long as the test process, named
// prefix-PID-*, for what a process shares across its tests (built binaries, a Terraform CLI
// config). t.TempDir cannot hold those, and a test binary has no hook that runs after its
// last test in every package, so it first removes the prefix-* directories no process holds:
// each run of the suite left ~100 MB of binaries in the temp directory. A directory is held
// by a flock on its lock file, which the kernel drops when the process ends, however it
// ends; unlike a PID, the lock means the same across PID namespaces that share /tmp.
func ProcessTempDir(prefix string) (string, error) {
	reapProcessDirs(os.TempDir(), prefix)
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s-%d-", prefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	lock, err := tryLock(filepath.Join(dir, processLockName), os.O_CREATE)
	if err != nil {
		return "", fmt.Errorf("verify: locking %s: %w", dir, err)
	}
	heldMu.Lock()
	held = append(held, lock)
	heldMu.Unlock()
	return dir, nil
}

// reapProcessDirs removes root's prefix-* directories whose lock file no process holds. A
// directory without one (not made by ProcessTempDir, or still being made) is left alone.
func reapProcessDirs(root, prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(root, prefix+"-*"))
	for _, d := range dirs {
		if lock, err := tryLock(filepath.Join(d, processLockName), 0); err == nil {
			_ = os.RemoveAll(d)
			lock.Close()
		}
	}
}

// tryLock opens path (flag adds to O_RDWR, e.g. O_CREATE) and takes an exclusive flock on it
// without waiting; the lock is held until the file is closed. It fails when the file is
// missing (without O_CREATE) or another process holds the lock.
func tryLock(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
