package spec

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// CodeMissingFile is the diagnostic of a file the spec names that is not there.
const CodeMissingFile = "P014"

// ReferencedFile is a file the spec names, relative to the spec's directory: an llm
// handler's system prompt, which fleet-worker reads at start (a missing one stops it).
type ReferencedFile struct {
	Pointer string // the spec value that names it
	Path    string // as written
	What    string // what it is, for the message
}

// ReferencedFiles lists the files the spec names with a relative path, in pointer order.
// Absolute paths are the image's (the worker's filesystem) and are not listed.
func (f *Fleet) ReferencedFiles() []ReferencedFile {
	var out []ReferencedFile
	for name, a := range f.Agents {
		if a == nil || a.Handler.LLM == nil || a.Handler.LLM.System == "" || filepath.IsAbs(a.Handler.LLM.System) {
			continue
		}
		out = append(out, ReferencedFile{Pointer: jsonptr.Join("agents", name, "handler", "llm", "system"),
			Path: a.Handler.LLM.System, What: "class " + name + "'s system prompt"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// checkFiles reports each referenced file that is not a regular file under dir, the spec's
// directory, at the value that names it.
func (f *File) checkFiles(dir string) diag.Diagnostics {
	var ds diag.Diagnostics
	if f == nil || f.Fleet == nil {
		return nil
	}
	for _, r := range f.Fleet.ReferencedFiles() {
		p := filepath.Join(dir, r.Path)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() {
			continue
		}
		why := "does not exist"
		if err == nil {
			why = "is not a regular file"
		}
		d := ds.Errorf(CodeMissingFile, r.Pointer, "%s %s %s (relative to the spec's directory: %s)", r.What, r.Path, why, p)
		d.Detail = "Add the file, or fix the path; fleet-worker reads it at start and does not start without it."
		d.Subject = f.Index.Value(r.Pointer)
	}
	return ds
}
