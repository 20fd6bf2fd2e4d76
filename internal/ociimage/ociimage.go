// Package ociimage is what fleetc's two daemonless image builders share (tools/image, which
// writes the fleet-worker image, and `fleetc image build`, which writes a class image on a
// base): the facts of a fleet-worker image (its entrypoint and user), reproducible layers,
// where an image comes from (a registry, an OCI layout, a tarball) and where it goes, each
// step reported as it happens: an image build is minutes of silent work otherwise.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What every image that runs fleet-worker is: the repository's Dockerfile and the class-image
// examples (examples/images/*) say the same; tools/image's tests hold them together.
const (
	Entrypoint = "/usr/local/bin/fleet-worker"
	User       = "65532:65532" // distroless "nonroot"
)

// Epoch is every file's and every image's time, so the same inputs build the same bytes.
var Epoch = time.Unix(0, 0).UTC()

// File is one entry of a layer: a regular file (Body), a directory (Dir) or a symlink
// (Link). Name is absolute in the image.
type File struct {
	Name string
	Mode int64
	Body []byte
	Dir  bool
	Link string
}

// Layer is a reproducible OCI layer of files: owned by root, at Epoch, in name order, with
// every parent directory (mode 0755) before its children.
func Layer(files []File) (v1.Layer, error) {
	entries := map[string]File{}
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean(f.Name), "/")
		if name == "." || name == "" || name == ".." || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("layer entry %q: not a path in the image", f.Name)
		}
		f.Name = name
		entries[name] = f
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = File{Name: d, Mode: 0o755, Dir: true}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{Name: n, Mode: f.Mode, ModTime: Epoch, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, n+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// Size is n bytes as a person reads it (1.2 MB), in SI units as registries show them.
func Size(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// Short is a digest as progress lines show it: the algorithm and 12 hex digits.
func Short(h v1.Hash) string {
	if len(h.Hex) > 12 {
		return h.Algorithm + ":" + h.Hex[:12]
	}
	return h.String()
}
