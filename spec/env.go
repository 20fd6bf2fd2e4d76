package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// environmentsKey is the top-level field that declares a fleet's environments.
const environmentsKey = "environments"

// Environments lists the environments the spec declares, sorted; nil when it declares none.
func (f *File) Environments() []string {
	envs, _ := f.doc[environmentsKey].(map[string]any)
	if len(envs) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(envs))
}

// Select returns the spec as environment env deploys it: the document with env's overrides
// merged in (maps merge key by key, lists and scalars replace), checked against the schema
// again and decoded. A value that came from an override is located at the override, so a
// rule that fails because of it points there. env "" is the spec as written, which is only
// a fleet when it declares no environments; otherwise a P013 says to name one.
func (f *File) Select(env string) (*File, diag.Diagnostics) {
	names := f.Environments()
	var ds diag.Diagnostics
	switch {
	case env == "" && len(names) == 0:
		return f, nil
	case env == "":
		d := ds.Errorf("P013", "/"+environmentsKey, "this spec declares environments %s: name one with --env", strings.Join(names, ", "))
		d.Detail = "Each environment is its own deployment of the fleet (its own names, region, scale). validate, build and diff without --env take every environment; types, schemas check and invoke need none (events, outputs and handlers are the same in every environment); the other commands act on one."
		d.Subject = f.Index.Key("/" + environmentsKey)
		return nil, ds
	case !slices.Contains(names, env):
		d := ds.Errorf("P013", "/"+environmentsKey, "unknown environment %q", env)
		if len(names) == 0 {
			d.Summary += ": this spec declares no environments"
			d.Detail = "Declare it under environments: (see docs/environments.md), or name no environment."
		} else {
			d.Summary += "; the spec declares " + strings.Join(names, ", ")
			if s := suggest(env, names); s != "" {
				d.Summary += fmt.Sprintf("; did you mean %q?", s)
			}
			d.Detail = "--env names one of the environments declared under environments:."
		}
		d.Subject = f.Index.Key("/" + environmentsKey)
		return nil, ds
	}
	doc := deepCopy(f.doc).(map[string]any)
	overrides, _ := doc[environmentsKey].(map[string]any)[env].(map[string]any)
	delete(doc, environmentsKey)
	sel := &File{Name: f.Name, Src: f.Src, Index: f.Index.clone(), Env: env}
	merge(doc, overrides, "", Pointer(environmentsKey, env), sel.Index)
	return sel, sel.decode(doc, nil, map[string]bool{})
}

// merge writes src's values over dst's: maps merge key by key, anything else replaces. Each
// replaced value takes the position of the override (at srcPath) in idx.
func merge(dst, src map[string]any, dstPath, srcPath string, idx *Index) {
	for _, k := range slices.Sorted(maps.Keys(src)) {
		dp, sp := dstPath+"/"+jsonptr.Escape(k), srcPath+"/"+jsonptr.Escape(k)
		sm, srcIsMap := src[k].(map[string]any)
		if dm, dstIsMap := dst[k].(map[string]any); srcIsMap && dstIsMap {
			merge(dm, sm, dp, sp, idx)
			continue
		}
		dst[k] = deepCopy(src[k])
		idx.move(sp, dp)
	}
}

// clone copies the index so a Select can relocate values without touching the spec's.
func (x *Index) clone() *Index {
	c := *x
	c.keys, c.values, c.containers = maps.Clone(x.keys), maps.Clone(x.values), maps.Clone(x.containers)
	return &c
}

// move makes the positions recorded at and below from those of to: the value at to was
// replaced by the one written at from.
func (x *Index) move(from, to string) {
	under := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	for _, m := range []map[string]diag.Range{x.keys, x.values} {
		for p := range m {
			if under(p, to) {
				delete(m, p)
			}
		}
		for p, r := range m {
			if under(p, from) {
				m[to+strings.TrimPrefix(p, from)] = r
			}
		}
	}
	for p := range x.containers {
		if under(p, to) {
			delete(x.containers, p)
		}
	}
	for p, c := range x.containers {
		if under(p, from) {
			x.containers[to+strings.TrimPrefix(p, from)] = c
		}
	}
}

// deepCopy copies a document value (maps, lists, scalars).
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// overrideOf splits a path inside environments (/environments/prod/agents/coder/step) into
// the environment and the spec path it overrides (/agents/coder/step); ok is false elsewhere.
func overrideOf(path string) (env, target string, ok bool) {
	rest, found := strings.CutPrefix(path, "/"+environmentsKey+"/")
	if !found {
		return "", "", false
	}
	env, target, _ = strings.Cut(rest, "/")
	return jsonptr.Unescape(env), "/" + target, true
}

// specField reports whether name is a field of the spec at path (an instance path such as
// /agents/coder), by walking the schema from its root.
func specField(doc map[string]any, path, name string) bool {
	node := doc
	resolve := func(n map[string]any) map[string]any {
		for i := 0; i < 8 && n != nil; i++ {
			ref, ok := n["$ref"].(string)
			if !ok {
				break
			}
			n = schemaNode(doc, ref)
		}
		return n
	}
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		node = resolve(node)
		if seg == "" || node == nil {
			continue
		}
		props, _ := node["properties"].(map[string]any)
		if p, ok := props[jsonptr.Unescape(seg)].(map[string]any); ok {
			node = p
		} else if ap, ok := node["additionalProperties"].(map[string]any); ok {
			node = ap
		} else {
			return false
		}
	}
	node = resolve(node)
	props, _ := node["properties"].(map[string]any)
	_, ok := props[name]
	return ok
}
