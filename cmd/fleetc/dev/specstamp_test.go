package dev

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSpecStampRefusesWhatSpecReadFileRefuses: the watcher reads the spec as every command
// does (spec.ReadFile). A FIFO in place of fleet.yaml is unreadable at once (os.ReadFile
// blocked until a writer came), and a link out of the working tree is not followed.
func TestSpecStampRefusesWhatSpecReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("fleet.yaml", []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := specStamp("fleet.yaml"); got != "version: 1\n" {
		t.Fatalf("specStamp(regular file) = %q", got)
	}
	if err := syscall.Mkfifo("fifo.yaml", 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	secret := filepath.Join(t.TempDir(), "secret.env")
	if err := os.WriteFile(secret, []byte("TOKEN=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, "link.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo.yaml", "link.yaml"} {
		done := make(chan string, 1)
		go func() { done <- specStamp(name) }()
		select {
		case got := <-done:
			if got != "" {
				t.Errorf("specStamp(%s) = %q, want \"\" (refused)", name, got)
			}
		case <-time.After(5 * time.Second):
			// Unblock the reader so the test ends.
			if f, err := os.OpenFile(name, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Errorf("specStamp(%s) still reading after 5s", name)
		}
	}
}
