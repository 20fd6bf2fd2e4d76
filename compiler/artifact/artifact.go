// Package artifact holds generated files in memory and writes them in one place.
// Backends return Files; nothing else in the compiler touches the disk.
package artifact

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is one generated file; Path is slash-separated and relative to the output root.
type File struct {
	Path  string
	Bytes []byte
}

// Set is a collection of files keyed by path.
type Set struct{ files map[string][]byte }

// NewSet builds a set; a path given twice is an error (two backends claiming one file).
func NewSet(files ...File) (*Set, error) {
	s := &Set{files: map[string][]byte{}}
	for _, f := range files {
		if err := s.Add(f); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add puts f in the set.
func (s *Set) Add(f File) error {
	clean := filepath.ToSlash(filepath.Clean(f.Path))
	if clean != f.Path || strings.HasPrefix(clean, "../") || filepath.IsAbs(f.Path) {
		return fmt.Errorf("artifact path %q is not a clean relative path", f.Path)
	}
	if _, dup := s.files[f.Path]; dup {
		return fmt.Errorf("artifact %q generated twice", f.Path)
	}
	s.files[f.Path] = f.Bytes
	return nil
}

// Paths returns every path, sorted.
func (s *Set) Paths() []string {
	out := make([]string, 0, len(s.files))
	for p := range s.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Get returns a file's bytes.
func (s *Set) Get(path string) ([]byte, bool) {
	b, ok := s.files[path]
	return b, ok
}

// Files returns the files sorted by path.
func (s *Set) Files() []File {
	var out []File
	for _, p := range s.Paths() {
		out = append(out, File{Path: p, Bytes: s.files[p]})
	}
	return out
}

// ReadDir loads every regular file under dir into a set (for --check and golden tests).
func ReadDir(dir string) (*Set, error) {
	s := &Set{files: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s.files[filepath.ToSlash(rel)] = b
		return nil
	})
	return s, err
}

// Change is one difference between two sets.
type Change struct {
	Path string
	Kind string // added | removed | changed
}

// Diff lists what must change to turn have into want, sorted by path.
func Diff(have, want *Set) []Change {
	var out []Change
	for _, p := range want.Paths() {
		hb, ok := have.files[p]
		switch {
		case !ok:
			out = append(out, Change{p, "added"})
		case !bytes.Equal(hb, want.files[p]):
			out = append(out, Change{p, "changed"})
		}
	}
	for _, p := range have.Paths() {
		if _, ok := want.files[p]; !ok {
			out = append(out, Change{p, "removed"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// WriteDir replaces dir with exactly the set's files, atomically: the files are written to
// a sibling temporary directory which is then renamed into place, so an error never
// leaves a half-written output directory behind.
func WriteDir(dir string, s *Set) error {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, p := range s.Paths() {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, s.files[p], 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir) // put the previous output back
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
