package ociimage

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// ReadFile reads the regular file at name (absolute in the image) from img's filesystem, its
// layers flattened as a container would see them. No such file is an error wrapping
// fs.ErrNotExist.
func ReadFile(img v1.Image, name string) ([]byte, error) {
	want := strings.TrimPrefix(path.Clean("/"+name), "/")
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("/%s: %w", want, fs.ErrNotExist)
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(path.Clean(h.Name), "/") == want && h.Typeflag == tar.TypeReg {
			return io.ReadAll(tr)
		}
	}
}
