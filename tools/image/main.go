// Command image builds the fleet-worker container image without a container daemon: it
// cross-compiles a static fleet-worker per platform and writes a multi-platform OCI image
// layout (go-containerregistry) that `crane push`, `skopeo copy oci:DIR docker://…` or
// `regctl` push to ECR. It makes the same image as the repository's Dockerfile: the binary
// at Entrypoint, the CA bundle, a non-root user; tests check the two agree.
//
//	go run ./tools/image -o bin/fleet-worker-oci -version 0.2.0 [-platforms linux/amd64,linux/arm64]
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is; the Dockerfile says the same (TestDockerfileAgrees).
const (
	Entrypoint = "/usr/local/bin/fleet-worker"
	User       = "65532:65532" // distroless "nonroot"
	CABundle   = "/etc/ssl/certs/ca-certificates.crt"
	// VersionVar is the linker variable both binaries report (internal/buildinfo).
	VersionVar = "github.com/fleetc/fleetc/internal/buildinfo.Version"
)

func main() {
	out := flag.String("o", "bin/fleet-worker-oci", "OCI image layout directory to write (replaced)")
	version := flag.String("version", "0.1.0-dev", "version fleet-worker --version reports, and the image's version label")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	ca := flag.String("ca-bundle", CABundle, "CA certificates to put at "+CABundle+" (fleet-worker calls AWS over TLS)")
	flag.Parse()
	if err := Build(*out, *version, strings.Split(*platforms, ","), *ca); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote the fleet-worker %s image (%s) to %s\n", *version, *platforms, *out)
}

// Build compiles fleet-worker for each platform and writes the image index to dir.
func Build(dir, version string, platforms []string, caBundle string) error {
	ca, err := os.ReadFile(caBundle)
	if err != nil {
		return fmt.Errorf("CA bundle: %w (install Debian's ca-certificates, or pass -ca-bundle)", err)
	}
	tmp, err := os.MkdirTemp("", "fleet-worker-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		osName, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("platform %q: want os/arch", p)
		}
		bin := filepath.Join(tmp, osName+"-"+arch, "fleet-worker")
		if err := compile(bin, osName, arch, version); err != nil {
			return err
		}
		img, err := image(bin, ca, osName, arch, version)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}}})
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	_, err = layout.Write(dir, idx)
	return err
}

// compile builds a static fleet-worker (CGO off: no libc, so any base image runs it).
func compile(out, osName, arch, version string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X "+VersionVar+"="+version, "-o", out, "github.com/fleetc/fleetc/cmd/fleet-worker")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+osName, "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s/%s: %v\n%s", osName, arch, err, b)
	}
	return nil
}

// epoch is every file's and the image's time, so one version builds the same bytes.
var epoch = time.Unix(0, 0).UTC()

func image(bin string, ca []byte, osName, arch, version string) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{{strings.TrimPrefix(CABundle, "/"), 0o644, ca}, {strings.TrimPrefix(Entrypoint, "/"), 0o755, exe}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (ioReadCloser, error) { return nopCloser{bytes.NewReader(b)}, nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = osName, arch, v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.User = User
	cf.Config.Env = []string{"SSL_CERT_FILE=" + CABundle}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "fleet-worker", "org.opencontainers.image.version": version}
	return mutate.ConfigFile(img, cf)
}
