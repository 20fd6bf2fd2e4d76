package verifytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReapProcessDirs: a directory of an exited process goes; this process's, a running
// process's and a name without a pid stay.
func TestReapProcessDirs(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := func(pid string) string {
		d := filepath.Join(root, "fleetc-x-"+pid+"-123")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	gone := dir(fmt.Sprint(exited.Process.Pid))
	kept := []string{dir(fmt.Sprint(os.Getpid())), dir("1"), filepath.Join(root, "fleetc-x-abc")}
	if err := os.Mkdir(kept[2], 0o755); err != nil {
		t.Fatal(err)
	}
	reapProcessDirs(root, "fleetc-x")
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the exited process's %s survived: %v", gone, err)
	}
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
