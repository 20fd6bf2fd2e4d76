package ociimage

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// ReadFile sees the image as a container does: a later layer's file replaces an earlier
// one's, a directory is not a file, and a missing path says so with fs.ErrNotExist.
func TestReadFile(t *testing.T) {
	img := empty.Image
	for _, files := range [][]File{
		{{Name: "/app/handler.py", Mode: 0o644, Body: []byte("old")}, {Name: "/etc", Dir: true, Mode: 0o755}},
		{{Name: "/app/handler.py", Mode: 0o644, Body: []byte("new")}},
	} {
		l, err := Layer(files)
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"/app/handler.py", "app/handler.py", "/app/../app/handler.py"} {
		if b, err := ReadFile(img, name); err != nil || string(b) != "new" {
			t.Errorf("ReadFile(%q) = %q, %v; want the later layer's", name, b, err)
		}
	}
	for _, name := range []string{"/etc", "/app/missing"} {
		if _, err := ReadFile(img, name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%q): %v, want fs.ErrNotExist", name, err)
		}
	}
}
