// Command image builds the fleet-worker container image without a container daemon: it
// cross-compiles a static fleet-worker per platform and writes a multi-platform OCI image
// layout (go-containerregistry) that `crane push`, `skopeo copy oci:DIR docker://…` or
// `regctl` push to ECR, and `fleetc image build --worker oci:DIR` builds class images on. It
// makes the same image as the repository's Dockerfile: the binary at ociimage.Entrypoint, the
// CA bundle, a non-root user; tests check the two agree. Each stage is reported on stderr as
// it goes (a cold cross-compile takes minutes).
//
//	go run ./tools/image -o bin/fleet-worker-oci -version 0.2.0 [-platforms linux/amd64,linux/arm64]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/fleetc/fleetc/internal/ociimage"
)

// What the image is beyond ociimage's entrypoint and user; the Dockerfile says the same
// (TestDockerfileAgrees).
const (
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// VersionVar is the linker variable both binaries report (internal/buildinfo).
	VersionVar = "github.com/fleetc/fleetc/internal/buildinfo.Version"
)

func main() {
	out := flag.String("o", "bin/fleet-worker-oci", "OCI image layout directory to write (replaced)")
	version := flag.String("version", "0.1.0-dev", "version fleet-worker --version reports, and the image's version label")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	ca := flag.String("ca-bundle", CABundle, "CA certificates to put at "+CABundle+" (fleet-worker calls AWS over TLS)")
	flag.Parse()
	if err := Build(*out, *version, strings.Split(*platforms, ","), *ca, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote the fleet-worker %s image (%s) to %s\n", *version, *platforms, *out)
}

// Build compiles fleet-worker for each platform and writes the image index to dir, saying
// what it does on progress.
func Build(dir, version string, platforms []string, caBundle string, progress io.Writer) error {
	start := time.Now()
	ca, err := os.ReadFile(caBundle)
	if err != nil {
		return fmt.Errorf("CA bundle: %w (install Debian's ca-certificates, or pass -ca-bundle)", err)
	}
	tmp, err := os.MkdirTemp("", "fleet-worker-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	images := map[string]v1.Image{}
	for _, p := range platforms {
		plat, err := ociimage.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return err
		}
		bin := filepath.Join(tmp, plat.OS+"-"+plat.Architecture, "fleet-worker")
		if err := compile(bin, plat, version, progress); err != nil {
			return err
		}
		img, err := image(bin, ca, plat, version)
		if err != nil {
			return err
		}
		images[ociimage.Platform(plat)] = img
	}
	fmt.Fprintf(progress, "writing the OCI layout %s\n", dir)
	if err := ociimage.WriteLayout(dir, images, progress); err != nil {
		return err
	}
	fmt.Fprintf(progress, "done in %s\n", ociimage.Elapsed(start))
	return nil
}

// compileReport is how often a compile in progress says how far it got.
const compileReport = 15 * time.Second

// compile builds a static fleet-worker (CGO off: no libc, so any base image runs it). go
// build -v names each package it compiles; their count is the progress shown.
func compile(out string, p v1.Platform, version string, progress io.Writer) error {
	start := time.Now()
	plat := ociimage.Platform(p)
	fmt.Fprintf(progress, "compiling fleet-worker %s for %s (go build; a cold cache takes minutes)\n", version, plat)
	cmd := exec.Command("go", "build", "-v", "-trimpath", "-ldflags", "-s -w -X "+VersionVar+"="+version, "-o", out, "github.com/fleetc/fleetc/cmd/fleet-worker")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var pkgs atomic.Int64
	var log strings.Builder
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(compileReport)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintf(progress, "  %s: %d packages compiled, %s\n", plat, pkgs.Load(), ociimage.Elapsed(start))
			}
		}
	}()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		pkgs.Add(1)
		log.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	close(stop)
	if err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", plat, err, log.String())
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "  %s: fleet-worker %s (%d packages compiled) in %s\n", plat, ociimage.Size(fi.Size()), pkgs.Load(), ociimage.Elapsed(start))
	return nil
}

func image(bin string, ca []byte, p v1.Platform, version string) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layer, err := ociimage.Layer([]ociimage.File{
		{Name: CABundle, Mode: 0o644, Body: ca},
		{Name: ociimage.Entrypoint, Mode: 0o755, Body: exe},
	})
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
	cf.OS, cf.Architecture, cf.Created = p.OS, p.Architecture, v1.Time{Time: ociimage.Epoch}
	cf.Config.Entrypoint = []string{ociimage.Entrypoint}
	cf.Config.User = ociimage.User
	cf.Config.Env = []string{"SSL_CERT_FILE=" + CABundle}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "fleet-worker", "org.opencontainers.image.version": version}
	return mutate.ConfigFile(img, cf)
}
