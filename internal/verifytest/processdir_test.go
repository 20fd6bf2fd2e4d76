package verifytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestReapProcessDirs: a directory whose process has exited goes; this process's, one held
// by a running process and one without a lock file stay.
func TestReapProcessDirs(t *testing.T) {
	root := t.TempDir()
	mkdir := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	lockFile := func(d string) string {
		f := filepath.Join(d, processLockName)
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// An exited owner: flock(1) took the lock and let it go when it ended.
	exited := mkdir("fleetc-x-1-a")
	if out, err := exec.Command("flock", "-x", lockFile(exited), "true").CombinedOutput(); err != nil {
		t.Skipf("flock(1): %v %s", err, out)
	}
	// A running owner: flock(1) holds the lock while its child sleeps.
	running := mkdir("fleetc-x-2-b")
	holder := exec.Command("flock", "-x", lockFile(running), "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) { // until it holds the lock
		lock, err := tryLock(filepath.Join(running, processLockName), 0)
		if err != nil {
			break
		}
		lock.Close()
		if time.Now().After(deadline) {
			t.Fatal("flock(1) never took the lock")
		}
	}
	unlocked := mkdir("fleetc-x-3-c")

	t.Setenv("TMPDIR", root)
	mine, err := ProcessTempDir("fleetc-x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(exited); !os.IsNotExist(err) {
		t.Errorf("the exited process's %s survived: %v", exited, err)
	}
	for _, d := range []string{running, unlocked, mine} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	// This process holds its own: a second call leaves it.
	if _, err := ProcessTempDir("fleetc-x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("this process's own %s was removed: %v", mine, err)
	}
}
