package tfmirror

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FLEETC_TF_PROVIDER_MIRROR wins, given as the mirror or a path inside it; one without
// registry.terraform.io/ is an error, not a silent fallback to another mirror.
func TestFindEnvMirror(t *testing.T) {
	root := t.TempDir()
	aws := filepath.Join(root, registryDir, "hashicorp", "aws")
	if err := os.MkdirAll(aws, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{root, aws} {
		t.Setenv(EnvMirror, v)
		if got, err := Find(); got != root || err != nil {
			t.Errorf("%s=%s: Find() = %q, %v; want %s", EnvMirror, v, got, err, root)
		}
	}
	t.Setenv(EnvMirror, t.TempDir())
	if got, err := Find(); !errors.Is(err, ErrBadEnv) {
		t.Errorf("a directory without %s/: Find() = %q, %v; want ErrBadEnv", registryDir, got, err)
	}
	if c := CLIConfig(root); !strings.Contains(c, "filesystem_mirror") || !strings.Contains(c, `"`+root+`"`) {
		t.Errorf("CLIConfig(%s) = %s", root, c)
	}
}
