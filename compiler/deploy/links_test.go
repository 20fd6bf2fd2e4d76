package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/artifact"
)

// plan keeps its inventory beside the build's files; a link planted under that name must
// be neither read nor written through (issue #32).
func TestInventoryFollowsNoLink(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside.json")
	if err := os.WriteFile(outside, []byte(`{"resources":[{"address":"aws_sqs_queue.planted"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, InventoryFile)); err != nil {
		t.Fatal(err)
	}
	if rs, err := ReadInventory(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("ReadInventory read through the link: %v, %v", rs, err)
	}
	set, _ := artifact.NewSet()
	if err := WriteInventory(dir, set); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("WriteInventory: %v", err)
	}
	if b, _ := os.ReadFile(outside); !strings.Contains(string(b), "planted") {
		t.Errorf("the file behind the link was overwritten: %s", b)
	}
}
