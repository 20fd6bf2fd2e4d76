// Package artifact holds generated files in memory and writes them in one place.
// Backends return Files; nothing else in the compiler touches the disk.
package artifact

import (
	"bytes"
	"fmt"
	"maps"
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
	files  map[string][]byte
	module Module // the Terraform backend's blocks and inventory
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
	if !cleanRelative(f.Path) {
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

// SetModule records the generated Terraform's blocks and inventory beside the files.
func (s *Set) SetModule(m Module) { s.module = m }

// Module returns the recorded Terraform module.
func (s *Set) Module() *Module { return &s.module }

// Inventory returns the recorded resources, sorted by address.
func (s *Set) Inventory() []Resource { return s.module.Inventory }

// Resource returns the inventory entry of an address.
func (s *Set) Resource(address string) (Resource, bool) {
	inv := s.module.Inventory
	i, ok := slices.BinarySearchFunc(inv, address, func(r Resource, a string) int { return strings.Compare(r.Address, a) })
	if !ok {
		return Resource{}, false
	}
	return inv[i], true
}
