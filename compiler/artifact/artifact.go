// Package artifact holds generated files in memory and writes them in one place.
// Backends return Files; nothing else in the compiler touches the disk.
package artifact

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// File is one generated file; Path is slash-separated and relative to the output root.
type File struct {
	Path  string
	Bytes []byte
}

// Set is a collection of files keyed by path.
type Set struct {
	files     map[string][]byte
	inventory []Resource // the Terraform backend's resources, sorted by address
}

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
	out := slices.Sorted(maps.Keys(s.files))
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

// Manifest is the file in an output directory that lists what fleetc wrote there. fleetc
// owns exactly those paths: it replaces and removes them, and never touches anything else
// in the directory (terraform state, .terraform/, the spec itself).
const Manifest = ".fleetc-manifest"

// ReadDir loads every regular file under dir into a set, except the manifest (golden tests
// compare whole directories).
func ReadDir(dir string) (*Set, error) {
	s := &Set{files: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == Manifest {
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

// ReadOwned loads the files the manifest of dir lists (those present), for --check. A
// directory without a manifest owns nothing yet.
func ReadOwned(dir string) (*Set, error) {
	s := &Set{files: map[string][]byte{}}
	owned, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	for _, p := range owned {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.files[p] = b
	}
	return s, nil
}

func readManifest(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, Manifest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		clean := filepath.ToSlash(filepath.Clean(line))
		if clean != line || strings.HasPrefix(clean, "../") || filepath.IsAbs(line) {
			return nil, fmt.Errorf("%s lists %q, which is outside the directory", Manifest, line)
		}
		out = append(out, line)
	}
	return out, nil
}

// Change is one difference between two sets.
type Change struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // added | removed | changed
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

// WriteDir makes dir hold the set's files. Only paths fleetc owns are touched: the set's
// files are replaced and the files the previous manifest listed but the set lacks are
// removed; everything else in dir survives (so dir as a whole cannot be swapped in one
// rename: it holds Terraform state and .terraform/).
//
// What is guaranteed: every file is first written to a staging directory inside dir, so an
// error before the last step (a file in the way, a full disk, a permission) leaves the
// previous output exactly as it was. The last step renames the staged files into place one
// by one, each rename atomic (a reader sees a file's old bytes or its new ones, never a
// mix), removes stale files, and replaces the manifest last. A process killed during that
// step leaves some files new and some old under the old manifest; `build --check` reports
// them and the next build completes the change (and removes the abandoned staging
// directory).
func WriteDir(dir string, s *Set) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	removeAbandonedStages(dir)
	old, err := readManifest(dir)
	if err != nil {
		return err
	}
	// Refuse up front what would make a rename fail halfway: a file where a directory must
	// go, or a directory where a file must go.
	for _, p := range s.Paths() {
		if err := placeable(dir, p); err != nil {
			return err
		}
	}
	stage, err := os.MkdirTemp(dir, stagePrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	for _, p := range s.Paths() {
		full := filepath.Join(stage, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, s.files[p], 0o644); err != nil {
			return err
		}
	}
	var manifest strings.Builder
	manifest.WriteString("# Files written by fleetc build; it replaces and removes only these.\n")
	for _, p := range s.Paths() {
		manifest.WriteString(p + "\n")
	}
	if err := os.WriteFile(filepath.Join(stage, Manifest), []byte(manifest.String()), 0o644); err != nil {
		return err
	}
	// Everything is on disk: move it into place.
	for _, p := range s.Paths() {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(stage, filepath.FromSlash(p)), dst); err != nil {
			return err
		}
	}
	for _, p := range old {
		if _, keep := s.files[p]; keep {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removeEmptyParents(dir, filepath.Dir(full))
	}
	return os.Rename(filepath.Join(stage, Manifest), filepath.Join(dir, Manifest))
}

// stagePrefix names the staging directories WriteDir creates inside the output directory.
const stagePrefix = ".fleetc-stage-"

// removeAbandonedStages removes staging directories a killed build left behind.
func removeAbandonedStages(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), stagePrefix) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// placeable reports why the file p cannot be put under dir, if it cannot.
func placeable(dir, p string) error {
	parts := strings.Split(p, "/")
	cur := dir
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		if last && fi.IsDir() {
			return fmt.Errorf("cannot write %s: a directory is in the way", cur)
		}
		if !last && !fi.IsDir() {
			return fmt.Errorf("cannot write %s: %s is not a directory", filepath.Join(dir, p), cur)
		}
	}
	return nil
}

// removeEmptyParents removes now-empty directories from d up to (not including) root.
func removeEmptyParents(root, d string) {
	for d != root && strings.HasPrefix(d, root) {
		if os.Remove(d) != nil {
			return
		}
		d = filepath.Dir(d)
	}
}

// Resource is one block of the generated Terraform and the spec part that owns it. The
// Terraform backend records it as it writes the block, so every consumer (diff, plan
// summaries, the apply guard) reads ownership from one place instead of guessing it from
// file names.
type Resource struct {
	Address string `json:"address"` // aws_sqs_queue.coder, data.aws_iam_policy_document.coder
	Type    string `json:"type"`
	Part    string `json:"part"` // the owner: "class coder", "workflow conversation", "event x", "bus", "state", "eks", "provider"
	// Element is the part of its owner the block belongs to (a class's queue, DLQ or rule);
	// "" for the owner itself.
	Element Element `json:"element,omitempty"`
	Path    string  `json:"path,omitempty"` // the spec path the block is generated from
	File    string  `json:"file"`           // terraform/agent_coder.tf
}

// Element is a part of a class that the topology draws on its own.
type Element string

const (
	ElementQueue Element = "queue" // the class queue (and a FIFO class's ingress queue)
	ElementDLQ   Element = "dlq"   // its dead-letter queue
	ElementRule  Element = "rule"  // the EventBridge rule that feeds it, and its target
)

// SetInventory records the generated Terraform's resources beside the files.
func (s *Set) SetInventory(rs []Resource) { s.inventory = rs }

// Inventory returns the recorded resources, sorted by address.
func (s *Set) Inventory() []Resource { return s.inventory }

// Resource returns the inventory entry of an address.
func (s *Set) Resource(address string) (Resource, bool) {
	i, ok := slices.BinarySearchFunc(s.inventory, address, func(r Resource, a string) int { return strings.Compare(r.Address, a) })
	if !ok {
		return Resource{}, false
	}
	return s.inventory[i], true
}
