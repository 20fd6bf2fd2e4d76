// Package image builds an agent class's container image without a container daemon (fleetc
// image build): a base that has the handler's language runtime, fleet-worker at the
// entrypoint, and the project's handler files where the class's exec handler names them,
// as examples/images/*/Dockerfile build it, written as an OCI image layout or a tarball and
// pushed, each stage reported as it goes. fleetc compiles nothing here: fleet-worker comes
// built (a binary, or the image tools/image writes), so fleetc links no worker runtime.
package image

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/ociimage"
)

// Options say which class's image to build, from what, and where it goes.
type Options struct {
	Spec, Env, Class string
	Base             ociimage.Source
	// Worker is fleet-worker: a binary file, or an image (oci:DIR, tar:FILE, a reference)
	// whose entrypoint is fleet-worker; "" takes the binary dev runs (next to fleetc, PATH,
	// ./bin).
	Worker string
	// Platform is os/arch; "" takes the class runtime's (DefaultPlatform).
	Platform string
	Paths    dev.PathMap // image directories → the project's (fleetc init's /app → handler/)
	Layout   string      // OCI image layout directory to write ("" none)
	Tarball  string      // tarball to write ("" none)
	Push     bool        // push to Tag
	// Tag names the image in the tarball and where Push sends it; "" takes the class's
	// image (worker.image or agents.<class>.image).
	Tag      string
	Progress io.Writer
}

// Result is the image built.
type Result struct {
	Image    v1.Image
	Digest   v1.Hash
	Platform v1.Platform
	Tag      string
}

// Build builds the class's image and writes and pushes it as o says.
func Build(ctx context.Context, o Options) (*Result, error) {
	// An environment may change worker.image and nothing else an image is made of: the spec's
	// tag names the image only for a push or a tarball without --tag, and there --env is
	// needed (P013) when the spec has environments.
	a, err := class(o.Spec, o.Env, o.Class, o.Tag != "" || (!o.Push && o.Tarball == ""))
	if err != nil {
		return nil, err
	}
	plat, err := platform(o.Platform, a)
	if err != nil {
		return nil, err
	}
	tag, err := tag(o, a)
	if err != nil {
		return nil, err
	}
	pr := o.Progress
	fmt.Fprintf(pr, "fleetc image: %s (%s, %s), handler %s\n", a.Name, a.Runtime, ociimage.Platform(plat), handlerLine(a.Handler))

	base, err := o.Base.Image(ctx, plat)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	if err := reportBase(pr, o.Base, base); err != nil {
		return nil, err
	}
	layers, err := addLayers(o, a, plat, pr)
	if err != nil {
		return nil, err
	}
	img, err := assemble(base, layers, a)
	if err != nil {
		return nil, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(pr, "  image %s: entrypoint %s, user %s\n", ociimage.Short(d), ociimage.Entrypoint, ociimage.User)
	if err := output(ctx, o, tag, plat, img); err != nil {
		return nil, err
	}
	return &Result{Image: img, Digest: d, Platform: plat, Tag: tag}, nil
}

// class compiles the spec and returns the class.
func class(spec, env, name string, anyEnv bool) (*ir.Agent, error) {
	res, err := compiler.Compile(compiler.Input{Path: spec, Env: env, AnyEnv: anyEnv, Stop: compiler.Checked})
	if err != nil {
		return nil, err
	}
	if res.Fleet == nil || res.Diagnostics.HasErrors() {
		return nil, &deploy.BuildError{Diagnostics: res.Diagnostics}
	}
	var names []string
	for _, a := range res.Fleet.Agents {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return nil, fmt.Errorf("no class %q in fleet %s; its classes: %s", name, res.Fleet.Name, strings.Join(names, ", "))
}

// DefaultPlatform is the platform the class's runtime runs: AgentCore runs arm64 images
// only; the Lambda functions fleetc generates keep Lambda's default architecture, x86_64,
// and EKS nodes are most often amd64 too (--platform says otherwise).
func DefaultPlatform(a *ir.Agent) v1.Platform {
	if a.AgentCore != nil {
		return v1.Platform{OS: "linux", Architecture: "arm64"}
	}
	return v1.Platform{OS: "linux", Architecture: "amd64"}
}

func platform(flag string, a *ir.Agent) (v1.Platform, error) {
	if flag == "" {
		return DefaultPlatform(a), nil
	}
	return ociimage.ParsePlatform(flag)
}

// tag is where the image goes: --tag, else the class's image, which must not be the stock
// fleet-worker image when pushing (a class image pushed there would replace it).
func tag(o Options, a *ir.Agent) (string, error) {
	if o.Tag != "" {
		return o.Tag, nil
	}
	if a.Image == ir.DefaultImage {
		if o.Push {
			return "", fmt.Errorf("class %s's image is the stock fleet-worker image %s (worker.image is not set): set worker.image in the spec, or pass --tag", a.Name, ir.DefaultImage)
		}
		return "fleetc.local/" + a.Name + ":latest", nil
	}
	return a.Image, nil
}

func handlerLine(h ir.Handler) string {
	switch h.Kind {
	case "exec":
		return dev.CommandLine(h.Command)
	case "http":
		return "http " + h.URL
	}
	return h.Kind
}

func reportBase(pr io.Writer, src ociimage.Source, img v1.Image) error {
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	var size int64
	for _, l := range m.Layers {
		size += l.Size
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(pr, "  base %s: %s, %d layers, %s\n", src, ociimage.Short(d), len(m.Layers), ociimage.Size(size))
	return nil
}

// addLayers are fleet-worker's layer and, for an exec handler, the handler's files.
func addLayers(o Options, a *ir.Agent, plat v1.Platform, pr io.Writer) ([]v1.Layer, error) {
	exe, from, err := workerBinary(o.Worker, plat)
	if err != nil {
		return nil, err
	}
	wl, err := ociimage.Layer([]ociimage.File{{Name: ociimage.Entrypoint, Mode: 0o755, Body: exe}})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(pr, "  + fleet-worker %s from %s: %s\n", ociimage.Entrypoint, from, ociimage.Size(int64(len(exe))))
	if a.Handler.Kind != "exec" {
		fmt.Fprintf(pr, "  no handler files: %s's handler is %s, which fleet-worker runs itself\n", a.Name, a.Handler.Kind)
		return []v1.Layer{wl}, nil
	}
	files, dirs, err := HandlerFiles(a.Handler.Command, o.Paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		fmt.Fprintf(pr, "  no handler files: %s is not under a project directory (%s); the base must have it\n", dev.CommandLine(a.Handler.Command), mapping(o.Paths))
		return []v1.Layer{wl}, nil
	}
	hl, err := ociimage.Layer(files)
	if err != nil {
		return nil, err
	}
	var size, n int64
	for _, f := range files {
		if !f.Dir && f.Link == "" {
			size, n = size+int64(len(f.Body)), n+1
		}
	}
	noun := "files"
	if n == 1 {
		noun = "file"
	}
	fmt.Fprintf(pr, "  + handler %s: %d %s, %s\n", dirs, n, noun, ociimage.Size(size))
	return []v1.Layer{wl, hl}, nil
}

func mapping(m dev.PathMap) string {
	if len(m) == 0 {
		return "none mapped: pass --path IMAGE_DIR=DIR"
	}
	return m.String()
}

// assemble puts the layers on the base and sets what the class Dockerfiles set: fleet-worker
// the entrypoint (the base's CMD dropped, as a Dockerfile's ENTRYPOINT drops it), the
// non-root user; the base's environment and working directory stay.
func assemble(base v1.Image, layers []v1.Layer, a *ir.Agent) (v1.Image, error) {
	mt, err := base.MediaType()
	if err != nil {
		return nil, err
	}
	layerType := types.OCILayer
	if mt == types.DockerManifestSchema2 { // a Docker base keeps one manifest format
		layerType = types.DockerLayer
	}
	adds := make([]mutate.Addendum, len(layers))
	for i, l := range layers {
		adds[i] = mutate.Addendum{Layer: l, MediaType: layerType,
			History: v1.History{Created: v1.Time{Time: ociimage.Epoch}, CreatedBy: "fleetc image build"}}
	}
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: ociimage.Epoch}
	cf.Config.Entrypoint = []string{ociimage.Entrypoint}
	cf.Config.Cmd = nil
	cf.Config.User = ociimage.User
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels["org.opencontainers.image.title"] = a.Name
	return mutate.ConfigFile(img, cf)
}

// output writes the layout and the tarball and pushes, as asked.
func output(ctx context.Context, o Options, tag string, plat v1.Platform, img v1.Image) error {
	pr := o.Progress
	if o.Layout != "" {
		fmt.Fprintf(pr, "  writing the OCI layout %s\n", o.Layout)
		if err := ociimage.WriteLayout(o.Layout, map[string]v1.Image{ociimage.Platform(plat): img}, pr); err != nil {
			return fmt.Errorf("write %s: %w", o.Layout, err)
		}
	}
	if o.Tarball != "" {
		if err := ociimage.WriteTarball(o.Tarball, tag, img, pr); err != nil {
			return fmt.Errorf("write %s: %w", o.Tarball, err)
		}
	}
	if o.Push {
		if err := ociimage.Push(ctx, tag, img, pr); err != nil {
			return fmt.Errorf("push %s: %w", tag, err)
		}
	}
	return nil
}

// workerBinary returns fleet-worker's bytes for plat and where they came from.
func workerBinary(worker string, plat v1.Platform) ([]byte, string, error) {
	if worker == "" {
		worker = dev.FindWorkerBinary()
		if worker == "" {
			return nil, "", errors.New("no fleet-worker next to fleetc, on PATH or in ./bin: pass --worker (a static fleet-worker for the platform, or the image `go run ./tools/image` writes, as oci:DIR)")
		}
	}
	var exe []byte
	if fi, err := os.Stat(worker); err == nil && fi.Mode().IsRegular() {
		if exe, err = os.ReadFile(worker); err != nil {
			return nil, "", err
		}
	} else {
		src, err := ociimage.ParseSource(worker)
		if err != nil {
			return nil, "", fmt.Errorf("--worker: %w", err)
		}
		if exe, err = entrypointOf(src, plat); err != nil {
			return nil, "", fmt.Errorf("--worker: %w", err)
		}
	}
	if err := checkELF(exe, plat); err != nil {
		return nil, "", fmt.Errorf("fleet-worker %s: %w", worker, err)
	}
	return exe, worker, nil
}

// entrypointOf reads the file at the image's entrypoint: fleet-worker, in a fleet-worker
// image.
func entrypointOf(src ociimage.Source, plat v1.Platform) ([]byte, error) {
	img, err := src.Image(context.Background(), plat)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(cf.Config.Entrypoint) == 0 {
		return nil, fmt.Errorf("%s has no entrypoint: not a fleet-worker image", src)
	}
	exe, err := ociimage.ReadFile(img, cf.Config.Entrypoint[0])
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no file at its entrypoint /%s", src, strings.TrimPrefix(path.Clean(cf.Config.Entrypoint[0]), "/"))
	}
	return exe, err
}

// elfMachines are the architectures fleet-worker images are built for (tools/image's).
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkELF refuses a binary that cannot run on plat: not a Linux executable, another
// architecture, or linked against a libc the base may not have.
func checkELF(exe []byte, plat v1.Platform) error {
	want, ok := elfMachines[plat.Architecture]
	if !ok || plat.OS != "linux" {
		return fmt.Errorf("platform %s: fleet-worker images are linux/amd64 or linux/arm64", ociimage.Platform(plat))
	}
	f, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		return fmt.Errorf("not a Linux executable: %w", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("built for %v, the image is %s: pass --worker with one built for it (CGO_ENABLED=0 GOOS=linux GOARCH=%s go build ./cmd/fleet-worker, or `go run ./tools/image` as oci:DIR)",
			f.Machine, ociimage.Platform(plat), plat.Architecture)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it names an interpreter), and the base may have another libc: build it with CGO_ENABLED=0, as tools/image does")
		}
	}
	return nil
}

// skipped are the handler directory's files that are not the handler: the Dockerfile that
// docker build would read instead, and dot-files (.env, .venv, editor state) and caches.
func skipped(name string, dir bool) bool {
	return strings.HasPrefix(name, ".") || name == "__pycache__" || (!dir && (name == "Dockerfile" || strings.HasSuffix(name, ".pyc")))
}

// HandlerFiles are the project files an exec command runs, for its layer: every directory of
// paths that an argument of the command lies under, whole, at its image path. An argument
// under a mapped directory that the project lacks is an error: the image would not run.
// dirs says which directories were taken.
func HandlerFiles(command []string, paths dev.PathMap) (files []ociimage.File, dirs string, err error) {
	var used dev.PathMap
	for _, arg := range command {
		for _, p := range paths {
			if arg != p.Image && !strings.HasPrefix(arg, p.Image+"/") {
				continue
			}
			if local := paths.Command([]string{arg})[0]; local == arg {
				return nil, "", fmt.Errorf("the handler runs %s, and %s has no %s", arg, p.Local, strings.TrimPrefix(arg, p.Image+"/"))
			}
			if !slices.Contains(used, p) {
				used = append(used, p)
			}
		}
	}
	for _, p := range used {
		more, err := dirFiles(p)
		if err != nil {
			return nil, "", err
		}
		files = append(files, more...)
	}
	var parts []string
	for _, p := range used {
		rel := p.Local
		if wd, err := os.Getwd(); err == nil {
			if r, err := filepath.Rel(wd, p.Local); err == nil && !strings.HasPrefix(r, "..") {
				rel = r
			}
		}
		parts = append(parts, rel+"/ → "+p.Image)
	}
	return files, strings.Join(parts, ", "), nil
}

// dirFiles are the files of p.Local at their p.Image paths, modes kept.
func dirFiles(p dev.PathMapping) ([]ociimage.File, error) {
	var files []ociimage.File
	err := filepath.WalkDir(p.Local, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if file == p.Local {
			return nil
		}
		if skipped(d.Name(), d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(p.Local, file)
		if err != nil {
			return err
		}
		name := path.Join(p.Image, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			files = append(files, ociimage.File{Name: name, Mode: 0o755, Dir: true})
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(file)
			if err != nil {
				return err
			}
			files = append(files, ociimage.File{Name: name, Mode: 0o777, Link: link})
		case info.Mode().IsRegular():
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			// Readable (and, if executable for its owner, runnable) by the image's non-root user.
			mode := int64(0o644)
			if info.Mode()&0o100 != 0 {
				mode = 0o755
			}
			files = append(files, ociimage.File{Name: name, Mode: mode, Body: b})
		}
		return nil
	})
	return files, err
}
