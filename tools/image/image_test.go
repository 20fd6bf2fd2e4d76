package main

import (
	"archive/tar"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/fleetc/fleetc/internal/ociimage"
)

// The image the tool writes, checked as a registry would read it: a valid OCI index with
// one image per platform, each a static fleet-worker of that architecture at the
// entrypoint, run here (the host's platform) to print the version it was built with.
// Both platforms are built: arm64 is what AgentCore runs.
func TestBuildImage(t *testing.T) {
	// Two cold cross-compiles of fleet-worker (the AWS SDK included) take minutes on two
	// cores; bash .ci/run runs this test as its own step with the variable set.
	if os.Getenv("FLEETC_IMAGE_TEST") == "" {
		t.Skip("SKIPPED: set FLEETC_IMAGE_TEST=1 to cross-compile fleet-worker for both platforms (bash .ci/run does)")
	}
	if _, err := os.Stat(CABundle); err != nil {
		t.Skipf("SKIPPED, CHECKER NOT AVAILABLE: no %s (apt-get install ca-certificates)", CABundle)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	var progress strings.Builder
	if err := Build(dir, "9.8.7-test", []string{"linux/amd64", "linux/arm64"}, CABundle, &progress); err != nil {
		t.Fatal(err)
	}
	// Each stage is reported as it ends, not only the whole build.
	for _, want := range []string{"compiling fleet-worker 9.8.7-test for linux/arm64", "linux/amd64: fleet-worker ", "wrote linux/arm64 layer 1/1 sha256:", "done in "} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("invalid index: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(m.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(m.Manifests))
	}
	for _, d := range m.Manifests {
		arch := d.Platform.Architecture
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.OS != "linux" || strings.Join(cf.Config.Entrypoint, " ") != ociimage.Entrypoint || cf.Config.User != ociimage.User ||
			cf.Config.Labels["org.opencontainers.image.version"] != "9.8.7-test" {
			t.Errorf("%s config: %+v", arch, cf.Config)
		}
		layers, _ := img.Layers()
		if len(layers) != 1 {
			t.Fatalf("%s: %d layers", arch, len(layers))
		}
		rc, _ := layers[0].Uncompressed()
		files := map[string][]byte{}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			files["/"+h.Name] = b
			if "/"+h.Name == ociimage.Entrypoint && h.Mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable", arch, ociimage.Entrypoint)
			}
		}
		rc.Close()
		if len(files[CABundle]) == 0 {
			t.Errorf("%s: no CA bundle at %s", arch, CABundle)
		}
		exe := filepath.Join(t.TempDir(), "fleet-worker")
		os.WriteFile(exe, files[ociimage.Entrypoint], 0o755)
		f, err := elf.Open(exe)
		if err != nil {
			t.Fatalf("%s: entrypoint is not ELF: %v", arch, err)
		}
		if f.Machine != machines[arch] {
			t.Errorf("%s: ELF machine %v", arch, f.Machine)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked (has an interpreter): the minimal base has no libc", arch)
			}
		}
		f.Close()
		if arch == runtime.GOARCH {
			out, err := exec.Command(exe, "--version").Output()
			if err != nil || string(out) != "fleet-worker 9.8.7-test\n" {
				t.Errorf("%s --version: %q, %v", arch, out, err)
			}
		}
	}
	// One version, same bytes: the index digest does not depend on when it was built.
	dir2 := filepath.Join(t.TempDir(), "oci")
	if err := Build(dir2, "9.8.7-test", []string{"linux/amd64", "linux/arm64"}, CABundle, io.Discard); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	b, _ := os.ReadFile(filepath.Join(dir2, "index.json"))
	if string(a) != string(b) {
		t.Errorf("two builds differ:\n%s\n%s", a, b)
	}
}

// The repository's Dockerfile builds the same image as this tool: entrypoint, user, the
// version variable, a static build, both platforms documented.
func TestDockerfileAgrees(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	ep, _ := json.Marshal([]string{ociimage.Entrypoint})
	for _, want := range []string{
		"ENTRYPOINT " + string(ep),
		"USER " + ociimage.User,
		"-X " + VersionVar + "=${VERSION}",
		"CGO_ENABLED=0",
		"--platform linux/amd64,linux/arm64",
		"COPY --from=build /out/fleet-worker " + ociimage.Entrypoint,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^FROM gcr\.io/distroless/static`).MatchString(df) {
		t.Error("Dockerfile's final stage is not a minimal static base")
	}
}
