package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fleetc/fleetc/internal/tfmirror"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// TestDevDoc runs docs/dev.md's console blocks as TestDocs runs the others (consoleScript):
// `fleetc init hello`, `fleetc dev` in the background on kumo, the `fleetc send` it prints,
// the step through the starter's handler under RIE, `fleetc trace --dev`, then Ctrl-C and
// the teardown, which must exit 0. The document shows the ledger's 0 dead-lettered and the
// worker's "step finished", so a step that fails or dead-letters breaks it. It needs what the
// reader needs: kumo on 127.0.0.1:4566 (the hint dev prints names it), terraform with the
// provider mirror (dev writes its own CLI config for it: the script's HOME has no
// .terraformrc and no TF_CLI_CONFIG_FILE is set), aws-lambda-rie and python3. The fleet is
// named hello as in the document; no other test applies a fleet of that name. It is also
// issue 35's first hour, held once: the starter's first event completes through the
// project's handler/handler.py (dev prints that command line; no stand-in), 0 dead-lettered.
func TestDevDoc(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fleetc dev applies a fleet to kumo: minutes")
	}
	_, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	_, err = verifytest.Tool("terraform")
	verifytest.SkipIfMissing(t, err)
	if mirror, err := tfmirror.Find(); err != nil || mirror == "" {
		t.Skipf("no provider mirror (%s or %s): %v", tfmirror.EnvMirror, tfmirror.DefaultDir, err)
	}
	rie, err := verifytest.Tool("aws-lambda-rie")
	verifytest.SkipIfMissing(t, err)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("the starter's handler needs python3")
	}
	dir := t.TempDir()
	writeDocScript(t, dir, "docs/dev.md", 6)
	bin := workerDir(t)
	testscript.Run(t, testscript.Params{Dir: dir, Cmds: docCmds, Setup: func(e *testscript.Env) error {
		// fleet-worker, RIE and python3 on PATH, as on the reader's machine.
		path := []string{bin, filepath.Dir(rie), filepath.Dir(python), e.Getenv("PATH")}
		e.Setenv("PATH", strings.Join(path, string(os.PathListSeparator)))
		if m := os.Getenv(tfmirror.EnvMirror); m != "" {
			e.Setenv(tfmirror.EnvMirror, m)
		}
		return nil
	}})
}
