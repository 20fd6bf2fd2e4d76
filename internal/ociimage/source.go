package ociimage

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SourceKind is where an image is read from.
type SourceKind string

// The sources an image is read from, spelled as skopeo spells the local ones (oci:DIR).
const (
	FromRegistry SourceKind = "registry" // a reference: python:3.13-slim, $ECR/fleet-worker:0.2.0
	FromLayout   SourceKind = "oci"      // oci:DIR, an OCI image layout (one image, or an index)
	FromTarball  SourceKind = "tar"      // tar:FILE, a `docker save` or `crane pull` tarball
	FromScratch  SourceKind = "scratch"  // no base at all
)

// Source is an image to read: Kind and, but for scratch, Ref (the reference, directory or
// file).
type Source struct {
	Kind SourceKind
	Ref  string
}

// ParseSource reads REF, oci:DIR, tar:FILE or scratch.
func ParseSource(s string) (Source, error) {
	switch {
	case s == string(FromScratch):
		return Source{Kind: FromScratch}, nil
	case strings.HasPrefix(s, string(FromLayout)+":"):
		return Source{Kind: FromLayout, Ref: strings.TrimPrefix(s, string(FromLayout)+":")}, nil
	case strings.HasPrefix(s, string(FromTarball)+":"):
		return Source{Kind: FromTarball, Ref: strings.TrimPrefix(s, string(FromTarball)+":")}, nil
	}
	if _, err := name.ParseReference(s); err != nil {
		return Source{}, fmt.Errorf("%q is neither an image reference, oci:DIR, tar:FILE nor scratch: %w", s, err)
	}
	return Source{Kind: FromRegistry, Ref: s}, nil
}

func (s Source) String() string {
	switch s.Kind {
	case FromScratch:
		return string(FromScratch)
	case FromRegistry:
		return s.Ref
	}
	return string(s.Kind) + ":" + s.Ref
}

// RemoteOptions are how fleetc talks to a registry: the credentials docker login, a
// credential helper (docker-credential-ecr-login) or crane auth left in ~/.docker/config.json.
func RemoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

// Image reads the source's image for platform p: an index's entry for p, or the one image,
// which must be of p.
func (s Source) Image(ctx context.Context, p v1.Platform) (v1.Image, error) {
	var img v1.Image
	var err error
	switch s.Kind {
	case FromScratch:
		img = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
		return mutate.ConfigFile(img, cf)
	case FromRegistry:
		ref, perr := name.ParseReference(s.Ref)
		if perr != nil {
			return nil, perr
		}
		img, err = remote.Image(ref, append(RemoteOptions(ctx), remote.WithPlatform(p))...)
	case FromTarball:
		if _, err := os.Stat(s.Ref); err != nil {
			return nil, err
		}
		img, err = tarball.ImageFromPath(s.Ref, nil)
	case FromLayout:
		img, err = fromLayout(s.Ref, p)
	default:
		return nil, fmt.Errorf("unknown image source %q", s.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	if got := (v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}); !got.Satisfies(p) {
		return nil, fmt.Errorf("%s is an image for %s, not %s", s, Platform(got), Platform(p))
	}
	return img, nil
}

// fromLayout finds platform p's image in an OCI image layout: the layout's index, or an
// index nested in it (tools/image writes one), holds one image per platform.
func fromLayout(dir string, p v1.Platform) (v1.Image, error) {
	lp, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return nil, err
	}
	img, found, err := inIndex(idx, p)
	if err != nil {
		return nil, err
	}
	if img == nil {
		return nil, fmt.Errorf("no image for %s in the layout (it has %s)", Platform(p), strings.Join(found, ", "))
	}
	return img, nil
}

// inIndex returns idx's image for p, or nil and the platforms it has.
func inIndex(idx v1.ImageIndex, p v1.Platform) (v1.Image, []string, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	var found []string
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, nil, err
			}
			img, more, err := inIndex(child, p)
			if img != nil || err != nil {
				return img, nil, err
			}
			found = append(found, more...)
		case d.MediaType.IsImage():
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, nil, err
			}
			got := d.Platform
			if got == nil { // not in the descriptor: the image's config says
				cf, err := img.ConfigFile()
				if err != nil {
					return nil, nil, err
				}
				got = &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
			}
			if got.Satisfies(p) {
				return img, nil, nil
			}
			found = append(found, Platform(*got))
		}
	}
	return nil, found, nil
}

// Platform is p as --platform spells it: os/arch[/variant].
func Platform(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatform reads os/arch[/variant].
func ParsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/arm64", s)
	}
	return *p, nil
}
