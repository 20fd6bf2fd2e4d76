package image_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/fleetc/fleetc/cmd/fleetc/image"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/internal/ociimage"
	"github.com/fleetc/fleetc/schemas/contract"
)

// The image runs: built on a Python base (this machine's own python3 with its libraries and
// standard library, as a local base: no registry is reachable here), its filesystem is
// unpacked and its entrypoint run in it (a user namespace and chroot: no container runtime
// here) as fleetc invoke runs it, `fleet-worker dry-run` on the class's runtime config with
// the image's environment. fleet-worker runs the spec's `python3 /app/handler.py` from the
// image's /app, and the greeting comes back. What differs from Lambda: the runtime API (RIE's
// part, tools/image's TestEntrypointUnderRIE), and the user (the namespace's root, not 65532).
func TestImageRunsItsHandler(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("SKIPPED: no unshare to run the image's entrypoint in its own filesystem")
	}
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
		t.Skipf("SKIPPED: no user namespaces here (%v: %s)", err, out)
	}
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("SKIPPED: no /usr/bin/python3 to make a Python base of")
	}
	base := pythonBase(t, python)
	start := time.Now()
	var progress bytes.Buffer
	var spec string
	_, _, err = build(t, func(o *image.Options) {
		spec = o.Spec
		o.Base, o.Progress = ociimage.Source{Kind: ociimage.FromLayout, Ref: base}, &progress
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("built on a %s base in %s:\n%s", python, time.Since(start).Round(time.Millisecond), progress.String())
	out := regexp.MustCompile(`writing the OCI layout (\S+)`).FindStringSubmatch(progress.String())
	if out == nil {
		t.Fatalf("no layout written:\n%s", progress.String())
	}
	img := layoutImage(t, out[1])
	root := unpack(t, img)

	built, err := compiler.Compile(compiler.Input{Path: spec})
	if err != nil {
		t.Fatal(err)
	}
	if built.Diagnostics.HasErrors() {
		t.Fatal(built.Diagnostics)
	}
	for _, f := range built.Files.Files() {
		if f.Path == "runtime/greeter.json" {
			os.WriteFile(filepath.Join(root, "config.json"), f.Bytes, 0o644)
		}
	}
	os.WriteFile(filepath.Join(root, "input.json"), []byte(`{"trace_id":"t-img","name":"Ada"}`), 0o644)
	cf, _ := img.ConfigFile()
	chroot, err := exec.LookPath("chroot")
	if err != nil {
		t.Skip("SKIPPED: no chroot")
	}
	args := append([]string{"--user", "--map-root-user", chroot, root}, cf.Config.Entrypoint...)
	cmd := exec.Command("unshare", append(args, contract.DryRunCommand, "--config", "/config.json", "--input", "/input.json")...)
	cmd.Env = cf.Config.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("the image's entrypoint: %v\n%s", err, stderr.String())
	}
	var res contract.DryRun
	if err := json.Unmarshal(b, &res); err != nil || res.Code != "" || string(res.Result) != `{"greeting":"hello, Ada"}` {
		t.Errorf("dry run in the image: %s (%v)\n%s", b, err, stderr.String())
	}
}

// pythonBase writes an OCI layout of a Python base made from this machine's python: the
// interpreter, the shared libraries it loads, its standard library (tests and caches left
// out), and PATH, as python:3.13-slim sets it.
func pythonBase(t *testing.T, python string) string {
	t.Helper()
	ldd, err := exec.Command("ldd", python).Output()
	if err != nil {
		t.Skipf("SKIPPED: ldd %s: %v", python, err)
	}
	files := []ociimage.File{{Name: "/usr/bin/python3", Link: filepath.Base(python), Mode: 0o777}}
	add := func(p string, mode int64) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ociimage.File{Name: p, Mode: mode, Body: b})
	}
	add(python, 0o755)
	for _, lib := range regexp.MustCompile(`(/\S+\.so[.\d]*)`).FindAllString(string(ldd), -1) {
		add(lib, 0o755)
	}
	stdlib := filepath.Join("/usr/lib", filepath.Base(python))
	err = filepath.WalkDir(stdlib, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "__pycache__" || d.Name() == "test" || d.Name() == "site-packages" || d.Name() == "dist-packages") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			add(p, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return baseLayout(t, files, false)
}

// unpack writes img's filesystem to a directory.
func unpack(t *testing.T, img v1.Image) string {
	t.Helper()
	root := t.TempDir()
	if err := ociimage.Walk(img, func(h *tar.Header, content io.Reader) error {
		p := filepath.Join(root, strings.TrimPrefix(h.Name, "/"))
		os.MkdirAll(filepath.Dir(p), 0o755)
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(p, os.FileMode(h.Mode)|0o700)
		case tar.TypeSymlink:
			return os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			b, err := io.ReadAll(content)
			if err != nil {
				return err
			}
			return os.WriteFile(p, b, os.FileMode(h.Mode))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return root
}
