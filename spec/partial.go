package spec

import (
	"strings"

	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// collections are the top-level maps whose entries are independent parts of a spec: an
// entry with input errors can be left out while the rest is lowered and checked.
var collections = map[string]bool{"events": true, "models": true, "agents": true, "workflows": true}

// Part returns the spec part a JSON pointer lies in ("/agents/coder" for
// "/agents/coder/step/max"), or "" when it lies in no collection entry (a top-level field
// such as bus or defaults, which every part depends on).
func Part(path string) string {
	segs := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	if len(segs) < 2 || !collections[segs[0]] {
		return ""
	}
	return "/" + segs[0] + "/" + segs[1]
}

// partName is the entry name of a part pointer ("coder" for "/agents/coder").
func partName(part string) string {
	return jsonptr.Last(part)
}

// leaveOut removes from the document every part an input error lies in, so the rest can be
// checked. It returns the parts removed and those whose checks would be unreliable without
// them (a part that names a removed one, or that a removed one names); ok is false when an
// error lies outside every part, and nothing can be checked until it is fixed.
func leaveOut(value any, ds diag.Diagnostics) (removed, affected map[string]bool, ok bool) {
	root, isMap := value.(map[string]any)
	if !isMap {
		return nil, nil, false
	}
	removed, affected = map[string]bool{}, map[string]bool{}
	for _, d := range ds {
		if d.Severity != diag.Error {
			continue
		}
		part := Part(d.Path)
		if part == "" {
			return nil, nil, false
		}
		removed[part] = true
	}
	// The removed parts' raw values, before they go: a string in one that equals another
	// part's name is (conservatively) a reference to it.
	raw := map[string]any{}
	for part := range removed {
		coll, _ := root[strings.Split(part, "/")[1]].(map[string]any)
		raw[part] = coll[partName(part)]
		delete(coll, partName(part))
	}
	for coll := range collections {
		entries, _ := root[coll].(map[string]any)
		for name, v := range entries {
			part := Pointer(coll, name)
			for rp, rv := range raw {
				if mentions(v, partName(rp)) || mentions(rv, name) {
					affected[part] = true
				}
			}
		}
	}
	return removed, affected, true
}

// mentions reports whether a string equal to name occurs anywhere in v.
func mentions(v any, name string) bool {
	switch x := v.(type) {
	case string:
		return x == name
	case []any:
		for _, e := range x {
			if mentions(e, name) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if mentions(e, name) {
				return true
			}
		}
	}
	return false
}
