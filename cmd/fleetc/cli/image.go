package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/cmd/fleetc/image"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/internal/ociimage"
)

func newImageCmd(s *streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Build a class's container image without a Docker daemon",
		Long: `A class's image is fleet-worker (the entrypoint) plus the handler its handler.exec names, on a
base that has the handler's language runtime. image build writes it with no container
daemon and no root, as an OCI image layout or a tarball, and pushes it.`,
		Example: `  fleetc image build fleet/fleet.yaml greeter --base python:3.13-slim --worker oci:fleet-worker-oci --push`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(s.stderr)
			_ = c.Help()
			return exitCode(exitUsage)
		},
	}
	c.AddCommand(newImageBuildCmd(s))
	return c
}

// imageBuildOptions are image build's flags.
type imageBuildOptions struct {
	base, worker, platform, layout, tarball, tag string
	push                                         bool
	paths                                        []string
}

func newImageBuildCmd(s *streams) *cobra.Command {
	var o imageBuildOptions
	c := &cobra.Command{
		Use:   "build FILE CLASS --base IMAGE (-o DIR | --tarball F | --push) [--worker F|IMAGE] [--tag REF] [--platform OS/ARCH] [--path IMAGE_DIR=DIR]",
		Short: "Build a class's image (fleet-worker + its handler) as an OCI layout or tarball, and push it",
		Long: `Build writes CLASS's container image, as examples/images/*/Dockerfile build one, with no
Docker daemon: the base (--base), fleet-worker at ` + ociimage.Entrypoint + ` as the entrypoint,
the project's handler files at the image path the class's exec handler names (the image's
` + dev.ImageHandlerDir + ` is the project's ` + dev.ProjectHandlerDir + `/, fleetc init's layout, as for fleetc dev and invoke; --path
maps others; Dockerfile, dot-files and caches are left out), and user ` + ociimage.User + `. The base's
environment and working directory stay; its CMD goes, as a Dockerfile's ENTRYPOINT drops it.

An image is named as skopeo names it: a registry reference (python:3.13-slim, pulled with the
credentials of ~/.docker/config.json), oci:DIR (an OCI image layout), tar:FILE (a docker save
tarball), or scratch (for a handler that needs nothing from a base).

fleet-worker comes built, never compiled here: --worker is a static fleet-worker binary for
the platform or a fleet-worker image (oci:DIR as go run ./tools/image writes it, tar:FILE, a
reference) whose entrypoint is taken. Without --worker, the fleet-worker fleetc dev runs
(next to fleetc, on PATH, ./bin) is taken when it is a static binary of the platform.

The platform is the class runtime's (linux/arm64 for AgentCore, else linux/amd64) unless
--platform says. --push sends the image to --tag, else to the class's image in the spec
(worker.image, or agents.CLASS.image; of the environment --env names, which a spec with
environments then needs), which must not be the stock fleet-worker image.

Progress goes to stderr, per stage: the base, each layer added with its size, each blob
written, bytes pushed. The image's digest is printed on stdout.

Arguments:
  FILE   the fleet.yaml
  CLASS  the agent class

Exit 0 built, 1 FILE does not build or the image cannot be built, 2 usage error.`,
		Example: `  fleetc image build fleet/fleet.yaml greeter --base python:3.13-slim -o greeter-oci
  fleetc image build fleet/fleet.yaml greeter --base oci:python-oci --worker oci:fleet-worker-oci --tarball greeter.tar
  fleetc image build fleet/fleet.yaml greeter --base python:3.13-slim --worker "$ECR/fleet-worker:0.2.0" --push`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runImageBuild(args, s.env, o, s.stdout, s.stderr))
		},
	}
	c.Flags().StringVar(&o.base, "base", "", "the base image: REF, oci:DIR, tar:FILE or scratch (required)")
	c.Flags().StringVar(&o.worker, "worker", "", "fleet-worker: a static binary, or an image (oci:DIR, tar:FILE, REF) whose entrypoint it is (default: the one next to fleetc, on PATH, in ./bin)")
	c.Flags().StringVar(&o.platform, "platform", "", "os/arch of the image (default: the class runtime's: linux/arm64 for AgentCore, else linux/amd64)")
	c.Flags().StringVarP(&o.layout, "out", "o", "", "OCI image layout directory to write (replaced)")
	c.Flags().StringVar(&o.tarball, "tarball", "", "tarball to write (docker load, crane push, skopeo docker-archive:)")
	c.Flags().BoolVar(&o.push, "push", false, "push the image to --tag")
	c.Flags().StringVar(&o.tag, "tag", "", "the image's name, pushed to and in the tarball (default: the class's image in the spec)")
	c.Flags().StringArrayVar(&o.paths, "path", nil, pathFlagHelp)
	return c
}

func runImageBuild(pos []string, env string, o imageBuildOptions, stdout, stderr io.Writer) int {
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "fleetc image build: name one fleet.yaml and one class")
		return exitUsage
	}
	if o.base == "" {
		fmt.Fprintln(stderr, "fleetc image build: --base is required: an image with the handler's runtime (python:3.13-slim, oci:DIR, tar:FILE) or scratch")
		return exitUsage
	}
	if o.layout == "" && o.tarball == "" && !o.push {
		fmt.Fprintln(stderr, "fleetc image build: say where the image goes: -o DIR, --tarball F or --push")
		return exitUsage
	}
	base, err := ociimage.ParseSource(o.base)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc image build: --base: %v\n", err)
		return exitUsage
	}
	paths, err := dev.ResolvePathMap(pos[0], o.paths)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc image build: %v\n", err)
		return exitUsage
	}
	res, err := image.Build(context.Background(), image.Options{Spec: pos[0], Env: env, Class: pos[1], Base: base,
		Worker: o.worker, Platform: o.platform, Paths: paths, Layout: o.layout, Tarball: o.tarball, Push: o.push, Tag: o.tag, Progress: stderr})
	var be *deploy.BuildError
	switch {
	case errors.As(err, &be):
		render(stderr, "text", be.Diagnostics, judge(be.Diagnostics, false))
		fmt.Fprintf(stderr, "fleetc image build: %s does not build\n", pos[0])
		return exitInvalid
	case err != nil:
		fmt.Fprintf(stderr, "fleetc image build: %v\n", err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "%s %s %s\n", res.Digest, ociimage.Platform(res.Platform), res.Tag)
	return exitOK
}
