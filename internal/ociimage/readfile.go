package ociimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Walk calls fn for each entry of img's filesystem, its layers flattened as a container
// would see them, with the entry's header and a reader of its content. fn returning
// fs.SkipAll ends the walk without error; any other error ends it with that error.
func Walk(img v1.Image, fn func(h *tar.Header, content io.Reader) error) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h, tr); errors.Is(err, fs.SkipAll) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// ReadFile reads the regular file at name (absolute in the image) from img's filesystem. No
// such file is an error wrapping fs.ErrNotExist.
func ReadFile(img v1.Image, name string) ([]byte, error) {
	want := strings.TrimPrefix(path.Clean("/"+name), "/")
	var b []byte
	found := false
	err := Walk(img, func(h *tar.Header, content io.Reader) error {
		if strings.TrimPrefix(path.Clean(h.Name), "/") != want || h.Typeflag != tar.TypeReg {
			return nil
		}
		found = true
		var err error
		if b, err = io.ReadAll(content); err != nil {
			return err
		}
		return fs.SkipAll
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("/%s: %w", want, fs.ErrNotExist)
	}
	return b, nil
}
