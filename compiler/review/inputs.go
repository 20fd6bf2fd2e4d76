package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// InputChange is one generated file a resource reads (file(), templatefile(), or the
// manifest itself for Kubernetes objects) that differs between the sides, with what changed
// in it as readable JSON: one line per changed key.
type InputChange struct {
	File    string   `json:"file"`
	Changes []string `json:"changes"`
}

// changedInputs compares the files behind an argument on both sides.
func changedInputs(files []string, base, head *artifact.Set) []InputChange {
	var out []InputChange
	for _, f := range files {
		b, _ := base.Get(f)
		h, _ := head.Get(f)
		if bytes.Equal(b, h) {
			continue
		}
		out = append(out, InputChange{File: f, Changes: documentDiff(b, h)})
	}
	return out
}

// documentDiff lists the keys that differ between two JSON or YAML documents, as
// "/pointer: old → new". A string holding a JSON object (a ConfigMap's config.json) is
// compared key by key too; arrays are compared whole. Anything else is summarised by size.
func documentDiff(a, b []byte) []string {
	va, errA := decodeDoc(a)
	vb, errB := decodeDoc(b)
	if errA != nil || errB != nil {
		return []string{fmt.Sprintf("content changed (%d → %d bytes)", len(a), len(b))}
	}
	fa, fb := map[string]string{}, map[string]string{}
	flattenDoc(fa, "", va)
	flattenDoc(fb, "", vb)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(fa)) {
		nv, ok := fb[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s removed (was %s)", orSlash(k), shown(fa[k])))
		case nv != fa[k]:
			out = append(out, fmt.Sprintf("%s: %s → %s", orSlash(k), shown(fa[k]), shown(nv)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fb)) {
		if _, ok := fa[k]; !ok {
			out = append(out, fmt.Sprintf("%s added: %s", orSlash(k), shown(fb[k])))
		}
	}
	return out
}

func orSlash(k string) string {
	if k == "" {
		return "/"
	}
	return k
}

func decodeDoc(b []byte) (any, error) {
	if len(b) == 0 {
		return map[string]any{}, nil // a file that does not exist on one side
	}
	j, err := yaml.YAMLToJSON(b) // JSON is YAML
	if err != nil {
		return nil, err
	}
	var v any
	err = json.Unmarshal(j, &v)
	return v, err
}

// maxShown bounds one value in a diff line: a changed prompt or schema is named, not printed.
const maxShown = 80

func flattenDoc(out map[string]string, ptr string, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flattenDoc(out, ptr+"/"+jsonptr.Escape(k), e)
		}
		if len(x) == 0 {
			out[ptr] = "{}"
		}
		return
	case []any:
		if slices.ContainsFunc(x, func(e any) bool { _, m := e.(map[string]any); _, l := e.([]any); return m || l }) {
			for i, e := range x {
				flattenDoc(out, fmt.Sprintf("%s/%d", ptr, i), e)
			}
			return
		}
		// a list of scalars reads best whole: ["trace_id"] → ["trace_id","task_id"]
	case string:
		var inner map[string]any
		if strings.HasPrefix(strings.TrimSpace(x), "{") && json.Unmarshal([]byte(x), &inner) == nil {
			flattenDoc(out, ptr, inner)
			return
		}
	}
	b, _ := json.Marshal(v)
	out[ptr] = string(b)
}

func shown(s string) string {
	if utf8.RuneCountInString(s) > maxShown {
		return string([]rune(s)[:maxShown]) + "…"
	}
	return s
}

// predictManifests compares the Kubernetes manifests of the eks classes (k8s/<class>/*.yaml),
// object by object: what `kubectl apply` of the head changes over the base. A Deployment
// whose pod template changed (the runtime config's hash annotation, the image, the args)
// rolls out new pods.
func predictManifests(base, head *artifact.Set) []ResourceChange {
	var out []ResourceChange
	seen := map[string]bool{}
	for _, set := range []*artifact.Set{head, base} {
		for _, p := range set.Paths() {
			if !strings.HasPrefix(p, "k8s/") || seen[p] {
				continue
			}
			seen[p] = true
			b, inBase := base.Get(p)
			h, inHead := head.Get(p)
			rc := ResourceChange{Address: manifestName(h, b, p), Type: "k8s"}
			switch {
			case !inBase:
				rc.Action = Create
			case !inHead:
				rc.Action = Delete
				rc.Holds = "" // objects hold no data; the queue does
			case bytes.Equal(b, h):
				continue
			default:
				rc.Action = Update
				rc.Inputs = []InputChange{{File: p, Changes: documentDiff(b, h)}}
				for _, c := range rc.Inputs[0].Changes {
					if strings.HasPrefix(c, "/spec/template/") {
						rc.Reasons = []string{"pod template changed: rolls out new pods"}
						break
					}
				}
			}
			out = append(out, rc)
		}
	}
	slices.SortFunc(out, func(a, b ResourceChange) int { return strings.Compare(a.Address, b.Address) })
	return out
}

// manifestName is "Kind/namespace/name" of a manifest, or its path when it does not say.
func manifestName(head, base []byte, path string) string {
	doc := head
	if doc == nil {
		doc = base
	}
	var m struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &m); err != nil || m.Kind == "" {
		return path
	}
	return m.Kind + "/" + m.Metadata.Namespace + "/" + m.Metadata.Name
}
