package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/fleetc/fleetc/cmd/fleetc/cli"
	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/cmd/fleetc/image"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/ociimage"
	"github.com/fleetc/fleetc/internal/verifytest"
)

var (
	workerOnce sync.Once
	workerPath string
	workerErr  error
	workerDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if workerDir != "" {
		os.RemoveAll(workerDir)
	}
	os.Exit(code)
}

// staticWorker is fleet-worker built as an image needs it (static, the host's architecture),
// once per test process.
func staticWorker(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		if workerDir, workerErr = os.MkdirTemp("", "fleetc-image-test"); workerErr != nil {
			return
		}
		workerPath = filepath.Join(workerDir, "fleet-worker")
		// tools/image's flags: its compiled packages are reused from the build cache.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", workerPath, verifytest.WorkerPkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			workerErr = err
			workerPath = string(out)
		}
	})
	if workerErr != nil {
		t.Fatalf("build fleet-worker: %v\n%s", workerErr, workerPath)
	}
	return workerPath
}

// project is what `fleetc init` writes: the spec in hello/fleet/, the handler in hello/handler/.
func project(t *testing.T) (spec, handlerDir string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hello")
	var out bytes.Buffer
	if code := cli.Main([]string{"init", dir}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("fleetc init: %d\n%s", code, out.String())
	}
	return filepath.Join(dir, "fleet", "fleet.yaml"), filepath.Join(dir, dev.ProjectHandlerDir)
}

var hostPlatform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

// baseLayout writes a small base image as an OCI layout: files, an environment, a working
// directory and a CMD, as a language image has; Docker's media types when docker.
func baseLayout(t *testing.T, files []ociimage.File, docker bool) string {
	t.Helper()
	l, err := ociimage.Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	manifest, config, layerType := types.OCIManifestSchema1, types.OCIConfigJSON, types.OCILayer
	if docker {
		manifest, config, layerType = types.DockerManifestSchema2, types.DockerConfigJSON, types.DockerLayer
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, manifest), mutate.Addendum{Layer: l, MediaType: layerType})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, config)
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = hostPlatform.OS, hostPlatform.Architecture
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	cf.Config.Cmd = []string{"python3"}
	cf.Config.WorkingDir = "/srv"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "base-oci")
	if err := ociimage.WriteLayout(dir, map[string]v1.Image{ociimage.Platform(hostPlatform): img}, io.Discard); err != nil {
		t.Fatal(err)
	}
	return dir
}

// build runs image.Build with the given changes to a default: the init project, the small
// base, the static worker, an OCI layout.
func build(t *testing.T, edit func(*image.Options)) (*image.Result, string, error) {
	t.Helper()
	spec, _ := project(t)
	base := baseLayout(t, []ociimage.File{{Name: "/usr/bin/python3", Mode: 0o755, Body: []byte("not python")}}, true)
	var progress bytes.Buffer
	o := image.Options{Spec: spec, Class: "greeter", Base: ociimage.Source{Kind: ociimage.FromLayout, Ref: base},
		Worker: staticWorker(t), Platform: ociimage.Platform(hostPlatform), Paths: dev.DefaultPathMap(spec),
		Layout: filepath.Join(t.TempDir(), "out-oci"), Progress: &progress}
	if edit != nil {
		edit(&o)
	}
	res, err := image.Build(context.Background(), o)
	return res, progress.String(), err
}

// files flattens img: every path (absolute) to its header and content.
func files(t *testing.T, img v1.Image) map[string]fileEntry {
	t.Helper()
	out := map[string]fileEntry{}
	if err := ociimage.Walk(img, func(h *tar.Header, content io.Reader) error {
		b, err := io.ReadAll(content)
		out["/"+strings.TrimSuffix(h.Name, "/")] = fileEntry{h, b}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

type fileEntry struct {
	h    *tar.Header
	body []byte
}

func layoutImage(t *testing.T, dir string) v1.Image {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("the layout is not a valid OCI index: %v", err)
	}
	m, _ := idx.IndexManifest()
	if len(m.Manifests) != 1 || m.Manifests[0].Platform == nil || !m.Manifests[0].Platform.Equals(hostPlatform) {
		t.Fatalf("index manifests: %+v", m.Manifests)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// The layout holds the base's layer, then fleet-worker at the entrypoint and the project's
// handler/ at /app (its Dockerfile left out), with the config the class Dockerfiles give:
// fleet-worker the entrypoint, the base's CMD gone, the non-root user, the base's environment
// and working directory kept. A Docker base keeps Docker media types throughout. The same
// inputs build the same digest.
func TestBuildWritesClassImage(t *testing.T) {
	res, progress, err := build(t, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress)
	}
	var out string
	_, _, _ = build(t, func(o *image.Options) { out = o.Layout })
	img := layoutImage(t, out)
	d, _ := img.Digest()
	if d != res.Digest {
		t.Errorf("two builds of the same inputs: %s and %s", res.Digest, d)
	}
	m, _ := img.Manifest()
	if m.MediaType != types.DockerManifestSchema2 || len(m.Layers) != 3 {
		t.Fatalf("manifest %s with %d layers, want a Docker manifest (as its base) with base + fleet-worker + handler", m.MediaType, len(m.Layers))
	}
	for i, l := range m.Layers {
		if l.MediaType != types.DockerLayer {
			t.Errorf("layer %d is %s in a Docker manifest", i, l.MediaType)
		}
	}
	cf, _ := img.ConfigFile()
	if strings.Join(cf.Config.Entrypoint, " ") != ociimage.Entrypoint || cf.Config.Cmd != nil || cf.Config.User != ociimage.User ||
		cf.Config.WorkingDir != "/srv" || strings.Join(cf.Config.Env, " ") != "PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8" ||
		cf.Architecture != runtime.GOARCH || cf.OS != "linux" || cf.Config.Labels["org.opencontainers.image.title"] != "greeter" {
		t.Errorf("config: %s/%s %+v", cf.OS, cf.Architecture, cf.Config)
	}
	if len(cf.History) != 3 || len(cf.RootFS.DiffIDs) != 3 {
		t.Errorf("history %d, diff ids %d: want one per layer", len(cf.History), len(cf.RootFS.DiffIDs))
	}
	fs := files(t, img)
	worker, _ := os.ReadFile(staticWorker(t))
	if e := fs[ociimage.Entrypoint]; !bytes.Equal(e.body, worker) || e.h.Mode&0o111 == 0 {
		t.Errorf("%s: %d bytes, mode %o; want fleet-worker (%d bytes), executable", ociimage.Entrypoint, len(e.body), e.h.Mode, len(worker))
	}
	_, handlerDir := project(t) // the handler fleetc init writes, as the build read it
	py, _ := os.ReadFile(filepath.Join(handlerDir, "handler.py"))
	if e := fs[dev.ImageHandlerDir+"/handler.py"]; !bytes.Equal(e.body, py) || e.h.Mode&0o444 != 0o444 || e.h.Uid != 0 {
		t.Errorf("%s/handler.py: %q mode %o", dev.ImageHandlerDir, e.body, e.h.Mode)
	}
	if _, ok := fs[dev.ImageHandlerDir+"/Dockerfile"]; ok {
		t.Error("the handler's Dockerfile is in the image")
	}
	if string(fs["/usr/bin/python3"].body) != "not python" {
		t.Error("the base's files are not in the image")
	}
	for _, want := range []string{"fleetc image: greeter (lambda, " + ociimage.Platform(hostPlatform) + "), handler python3 /app/handler.py",
		"  base oci:", "  + fleet-worker " + ociimage.Entrypoint + " from ", "  + handler ", "handler/ → /app: 1 file, ", "layer 3/3 sha256:"} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}
}

// The tarball and the push carry the same image: the tarball read back as docker load reads
// it, the push through go-containerregistry's registry (a real OCI distribution server, in
// process) pulled back by its digest; the push reports its bytes.
func TestBuildTarballAndPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/hello-greeter:1"
	tarFile := filepath.Join(t.TempDir(), "greeter.tar")
	res, progress, err := build(t, func(o *image.Options) { o.Layout, o.Tarball, o.Push, o.Tag = "", tarFile, true, ref })
	if err != nil {
		t.Fatalf("%v\n%s", err, progress)
	}
	tag, _ := name.NewTag(ref)
	fromTar, err := tarball.ImageFromPath(tarFile, &tag)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	for what, img := range map[string]v1.Image{"tarball": fromTar, "registry": pulled} {
		if err := validate.Image(img); err != nil {
			t.Errorf("%s: invalid image: %v", what, err)
		}
		if d, _ := img.Digest(); d != res.Digest {
			t.Errorf("%s holds %s, built %s", what, d, res.Digest)
		}
	}
	if !strings.Contains(progress, "  push "+ref+": ") || !strings.Contains(progress, "  tarball "+tarFile+": ") {
		t.Errorf("progress does not report the push and the tarball:\n%s", progress)
	}
}

// fleet-worker from its own image (oci:DIR, as tools/image writes it, one image per
// platform): the file at that image's entrypoint is the one put in the class image.
func TestWorkerFromImage(t *testing.T) {
	exe, _ := os.ReadFile(staticWorker(t))
	l, _ := ociimage.Layer([]ociimage.File{{Name: "/opt/fw", Mode: 0o755, Body: exe}, {Name: "/etc/x", Mode: 0o644, Body: []byte("x")}})
	img, _ := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), l)
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config.Entrypoint = "linux", runtime.GOARCH, []string{"/opt/fw"}
	img, _ = mutate.ConfigFile(img, cf)
	dir := filepath.Join(t.TempDir(), "fw-oci")
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	otherImg, _ := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: other})
	if err := ociimage.WriteLayout(dir, map[string]v1.Image{ociimage.Platform(hostPlatform): img, "linux/" + other: otherImg}, io.Discard); err != nil {
		t.Fatal(err)
	}
	res, progress, err := build(t, func(o *image.Options) { o.Worker = "oci:" + dir })
	if err != nil {
		t.Fatalf("%v\n%s", err, progress)
	}
	if e := files(t, res.Image)[ociimage.Entrypoint]; !bytes.Equal(e.body, exe) {
		t.Errorf("%s is not the worker image's entrypoint (%d bytes)", ociimage.Entrypoint, len(e.body))
	}
}

// What would make an image that does not run is refused before anything is written.
func TestBuildRefuses(t *testing.T) {
	other := "linux/arm64"
	if runtime.GOARCH == "arm64" {
		other = "linux/amd64"
	}
	dynamic, err := exec.LookPath("sh") // the host's sh is dynamically linked
	if err != nil {
		t.Fatal(err)
	}
	notELF := filepath.Join(t.TempDir(), "fleet-worker")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	for _, c := range []struct {
		what string
		edit func(*image.Options)
		want string
	}{
		{"a worker of another architecture", func(o *image.Options) {
			o.Platform = other
			o.Base = ociimage.Source{Kind: ociimage.FromScratch}
		}, "built for EM_"},
		{"a dynamically linked worker", func(o *image.Options) { o.Worker = dynamic }, "dynamically linked"},
		{"a worker that is no executable", func(o *image.Options) { o.Worker = notELF }, "not a Linux executable"},
		{"a base of another platform", func(o *image.Options) { o.Platform = other }, "no image for " + other + " in the layout (it has " + ociimage.Platform(hostPlatform) + ")"},
		{"a tarball base of another platform", func(o *image.Options) {
			img, err := o.Base.Image(context.Background(), hostPlatform)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "base.tar")
			if err := ociimage.WriteTarball(file, "python:3", img, io.Discard); err != nil {
				t.Fatal(err)
			}
			o.Base, o.Platform = ociimage.Source{Kind: ociimage.FromTarball, Ref: file}, other
		}, "is an image for " + ociimage.Platform(hostPlatform) + ", not " + other},
		{"a handler file the project lacks", func(o *image.Options) {
			os.Remove(filepath.Join(o.Paths[0].Local, "handler.py"))
		}, "the handler runs /app/handler.py, and "},
		{"a push to the stock fleet-worker image", func(o *image.Options) {
			b, _ := os.ReadFile(o.Spec)
			s := strings.Replace(string(b), "image: 111122223333.dkr.ecr.eu-west-1.amazonaws.com/hello-greeter:1", "image: "+ir.DefaultImage, 1)
			os.WriteFile(o.Spec, []byte(s), 0o644)
			o.Push = true
		}, "is the stock fleet-worker image"},
		{"an unknown class", func(o *image.Options) { o.Class = "greter" }, `no class "greter" in fleet hello; its classes: greeter`},
	} {
		t.Run(c.what, func(t *testing.T) {
			_, progress, err := build(t, func(o *image.Options) {
				c.edit(o)
				o.Layout = filepath.Join(filepath.Dir(o.Layout), "never")
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q\n%s", err, c.want, progress)
			}
		})
	}
}

// The image's tag is the environment's worker.image when the spec has environments: a push
// or a tarball without --tag needs --env (P013), and takes that environment's image; with
// --tag, or to a layout alone, any environment builds the same image.
func TestTagPerEnvironment(t *testing.T) {
	spec := "../../../examples/environments/fleet.yaml"
	tarFile := filepath.Join(t.TempDir(), "triage.tar")
	for _, c := range []struct {
		env, tag, tarball string
		want              string // the tag, or the error
	}{
		{"", "", tarFile, "P013"},
		{"prod", "", tarFile, "333344445555.dkr.ecr.eu-central-1.amazonaws.com/fleet-worker:0.1.0"},
		{"", "example.com/triage:1", tarFile, "example.com/triage:1"},
		{"", "", "", "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"},
	} {
		res, progress, err := build(t, func(o *image.Options) {
			o.Spec, o.Class, o.Env, o.Tag, o.Tarball, o.Paths = spec, "triage", c.env, c.tag, c.tarball, nil
		})
		got := ""
		if err != nil {
			got = err.Error()
			var be *deploy.BuildError
			if errors.As(err, &be) {
				got = be.Diagnostics.Error() + fmt.Sprint(be.Diagnostics)
			}
		} else {
			got = res.Tag
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("env %q tag %q tarball %q: got %q, want %q\n%s", c.env, c.tag, c.tarball, got, c.want, progress)
		}
	}
}

// Without --worker, the fleet-worker fleetc dev runs is taken (here: the one on PATH), and
// the progress says which.
func TestWorkerFoundAsDevFindsIt(t *testing.T) {
	worker := staticWorker(t)
	t.Setenv("PATH", filepath.Dir(worker)+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, progress, err := build(t, func(o *image.Options) { o.Worker = "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, progress)
	}
	if !strings.Contains(progress, "+ fleet-worker "+ociimage.Entrypoint+" from "+worker+": ") {
		t.Errorf("progress does not name %s:\n%s", worker, progress)
	}
}
