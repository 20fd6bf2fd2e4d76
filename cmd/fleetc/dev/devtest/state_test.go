package devtest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestStateResources: a state that still holds a resource lists it, an emptied one lists
// none, and a file that is not a state is an error, not "nothing left".
func TestStateResources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	held := write("held.tfstate", `{"version":4,"resources":[{"mode":"managed","type":"aws_sqs_queue","name":"solver","instances":[]}]}`)
	if left, err := StateResources(held); err != nil || !slices.Equal(left, []Resource{{Type: "aws_sqs_queue", Name: "solver"}}) {
		t.Errorf("held: %v, %v", left, err)
	}
	empty := write("empty.tfstate", `{"version":4,"resources":[]}`)
	if left, err := StateResources(empty); err != nil || len(left) != 0 {
		t.Errorf("empty: %v, %v", left, err)
	}
	if _, err := StateResources(write("bad.tfstate", "not json")); err == nil {
		t.Error("a file that is not a state read as empty")
	}
	if _, err := StateResources(filepath.Join(dir, "missing.tfstate")); err == nil {
		t.Error("a missing state read as empty")
	}
}
