package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/schemas"
	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

const schemaURL = "https://fleetc.dev/schemas/fleet.schema.json"

var (
	schemaOnce sync.Once
	schemaDoc  map[string]any // the raw schema, for did-you-mean and field lists
	compiled   *jsonschema.Schema
	schemaErr  error
)

// Schema returns the compiled fleet.yaml JSON Schema and its raw document.
func Schema() (*jsonschema.Schema, map[string]any, error) {
	schemaOnce.Do(func() {
		raw, err := fs.ReadFile(schemas.FS, "fleet.schema.json")
		if err != nil {
			schemaErr = err
			return
		}
		if schemaErr = json.Unmarshal(raw, &schemaDoc); schemaErr != nil {
			return
		}
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft7
		c.AssertFormat = true
		c.Formats["duration"] = func(v any) bool {
			s, ok := v.(string)
			if !ok {
				return true
			}
			_, err := ParseDuration(s)
			return err == nil
		}
		c.Formats["size"] = func(v any) bool {
			s, ok := v.(string)
			if !ok {
				return true
			}
			_, err := ParseSize(s)
			return err == nil
		}
		if schemaErr = c.AddResource(schemaURL, strings.NewReader(string(raw))); schemaErr != nil {
			return
		}
		compiled, schemaErr = c.Compile(schemaURL)
	})
	return compiled, schemaDoc, schemaErr
}

func validateSchema(value any, idx *Index) diag.Diagnostics {
	var ds diag.Diagnostics
	sch, doc, err := Schema()
	if err != nil {
		d := ds.Errorf("P000", "", "internal error: the embedded fleet schema does not compile: %v", err)
		d.Subject = idx.rangeAt(1, 1, 0)
		return ds
	}
	err = sch.Validate(value)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return nil
	}
	fields := fieldErrors{missing: map[*diag.Diagnostic]string{}, unknown: map[*diag.Diagnostic]string{}}
	for _, leaf := range leaves(ve) {
		ds = append(ds, schemaDiag(leaf, value, doc, idx, fields)...)
	}
	return fields.foldMisplaced(ds)
}

// fieldErrors remembers which field each unknown-field and missing-field error names.
type fieldErrors struct{ missing, unknown map[*diag.Diagnostic]string }

// foldMisplaced turns "unknown field bus in state" plus "missing required field bus in the
// top level" into one error at the field that is there, saying where it belongs: the field
// is written, at the wrong place (usually its indentation).
func (fe fieldErrors) foldMisplaced(ds diag.Diagnostics) diag.Diagnostics {
	out := ds[:0]
	for _, d := range ds {
		name, isMissing := fe.missing[d]
		if !isMissing {
			out = append(out, d)
			continue
		}
		folded := false
		for u, uname := range fe.unknown {
			if uname == name {
				u.Summary += fmt.Sprintf("; %s belongs in %s, where it is missing (check its indentation)", name, where(d.Path))
				folded = true
			}
		}
		if !folded {
			out = append(out, d)
		}
	}
	return out
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	// A oneOf says one thing ("exactly one of"); its branches' failures would say each
	// alternative is missing.
	if len(ve.Causes) == 0 || strings.HasSuffix(ve.KeywordLocation, "/oneOf") {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// schemaFailure is one schema failure with what its diagnostics are written from: the
// instance (root), the raw schema (doc) and the schema node that failed.
type schemaFailure struct {
	ve    *jsonschema.ValidationError
	root  any
	doc   map[string]any
	idx   *Index
	path  string         // instance location
	node  map[string]any // the failing keyword's schema object
	field string         // the instance location in fleet.yaml words
	ds    diag.Diagnostics
}

// schemaDiag turns one schema failure into diagnostics that speak fleet.yaml, not JSON Schema.
func schemaDiag(ve *jsonschema.ValidationError, root any, doc map[string]any, idx *Index, fields fieldErrors) diag.Diagnostics {
	f := &schemaFailure{ve: ve, root: root, doc: doc, idx: idx, path: ve.InstanceLocation,
		node: schemaNode(doc, ve.AbsoluteKeywordLocation), field: fieldName(ve.InstanceLocation)}
	if strings.Contains(ve.KeywordLocation, "/propertyNames/") {
		f.badName()
		return f.ds
	}
	path, node := f.path, f.node
	switch kw := ve.KeywordLocation[strings.LastIndexByte(ve.KeywordLocation, '/')+1:]; kw {
	case "additionalProperties":
		f.unknown(fields)
	case "required":
		f.missing(fields)
	case "type":
		want, _ := node["type"]
		d := f.ds.Errorf("P003", path, "%s must be %s, not %s", f.field, typeWords(want), describe(lookup(root, path)))
		d.Detail = strings.TrimSpace(fmt.Sprint(node["description"]))
		if node["description"] == nil {
			d.Detail = ""
		}
		d.Subject = idx.Value(path)
	case "format", "pattern":
		f.badFormat()
	case "enum", "const":
		f.notAllowed()
	case "not":
		d := f.ds.Errorf("P007", path, "%q is not allowed for %s", fmt.Sprint(lookup(root, path)), f.field)
		if desc, ok := schemaNode(doc, parentLoc(ve.AbsoluteKeywordLocation))["description"].(string); ok {
			d.Detail = desc
		}
		d.Subject = idx.Value(path)
	case "oneOf":
		var names []string
		branches, _ := node["oneOf"].([]any)
		for _, b := range branches {
			if req, _ := b.(map[string]any)["required"].([]any); len(req) == 1 {
				names = append(names, fmt.Sprint(req[0]))
			}
		}
		d := f.ds.Errorf("P008", path, "%s: %s", where(path), ve.Message)
		if len(names) == len(branches) {
			d.Summary = fmt.Sprintf("%s needs exactly one of %s", where(path), strings.Join(names, ", "))
		}
		d.Subject = idx.Key(path)
	case "minProperties", "maxProperties":
		d := f.ds.Errorf("P008", path, "%s: %s", where(path), ve.Message)
		if names := propertyNames(schemaNode(doc, parentLoc(ve.AbsoluteKeywordLocation))); len(names) > 0 && node["maxProperties"] != nil {
			d.Summary = fmt.Sprintf("%s needs exactly one of %s", where(path), strings.Join(names, ", "))
		}
		d.Subject = idx.Key(path)
	default:
		d := f.ds.Errorf("P008", path, "%s: %s", f.field, ve.Message)
		if desc, ok := node["description"].(string); ok {
			d.Detail = desc
		}
		d.Subject = idx.Value(path)
	}
	return f.ds
}

// badName is a map key that is not a valid name (propertyNames).
func (f *schemaFailure) badName() {
	name := jsonptr.Last(f.path)
	parent := where(f.path[:strings.LastIndexByte(f.path, '/')])
	d := f.ds.Errorf("P007", f.path, "%q is not a valid name in %s: %s", name, parent, f.ve.Message)
	d.Detail = "Names become part of AWS resource names: lower-case letters, digits and hyphens, starting with a letter."
	d.Subject = f.idx.Key(f.path)
}

// unknown reports each field the object does not declare (additionalProperties): P012
// for a field an environment may not override, else P002 with a did-you-mean. The unknown
// fields and the known ones come from the schema node and the instance, never from the
// validator's English message.
func (f *schemaFailure) unknown(fields fieldErrors) {
	path, node := f.path, f.node
	known := propertyNames(node)
	for _, name := range unknownFields(node, lookup(f.root, path)) {
		p := path + "/" + jsonptr.Escape(name)
		if env, target, ok := overrideOf(path); ok && specField(f.doc, target, name) {
			d := f.ds.Errorf("P012", p, "environment %s: %s cannot be overridden per environment", env, fieldName(strings.TrimSuffix(target, "/")+"/"+name))
			d.Detail = "Environments change where and how big the fleet runs, never what it does: contracts, handlers, steps and names are the same in every environment, so staging tests what prod runs. "
			if len(known) > 0 {
				d.Detail += "Overridable here: " + strings.Join(known, ", ") + "."
			} else {
				d.Detail += "Nothing here is overridable."
			}
			d.Subject = f.idx.Key(p)
			continue
		}
		d := f.ds.Errorf("P002", p, "unknown field %q in %s", name, where(path))
		if s := suggest(name, known); s != "" {
			d.Summary += fmt.Sprintf("; did you mean %q?", s)
			if slices.Contains(missingFields(node, lookup(f.root, path)), s) {
				d.Summary += fmt.Sprintf(" (%s is required)", s)
			}
		}
		d.Detail = "Known fields here: " + strings.Join(known, ", ") + "."
		d.Subject = f.idx.Key(p)
		fields.unknown[d] = name
	}
}

// missing reports each required field the object lacks, except one a misspelt field
// stands for (its unknown-field error says "did you mean …? (… is required)").
func (f *schemaFailure) missing(fields fieldErrors) {
	path, node := f.path, f.node
	obj := lookup(f.root, path)
	for _, name := range missingFields(node, obj) {
		if misspelt(name, node, obj) {
			continue
		}
		d := f.ds.Errorf("P008", path, "missing required field %q in %s", name, where(path))
		if v, ok := constOf(node, name); ok {
			d.Summary += fmt.Sprintf("; add %s: %s", name, v) // one value is allowed: say it
		}
		d.Detail = describeField(node, name)
		d.Subject = f.idx.Key(path)
		fields.missing[d] = name
	}
}

// badFormat is a string that is not a duration, a size or a match of its pattern.
func (f *schemaFailure) badFormat() {
	path := f.path
	s, _ := lookup(f.root, path).(string)
	var d *diag.Diagnostic
	switch f.node["format"] {
	case "duration":
		_, err := ParseDuration(s)
		d = f.ds.Errorf("P004", path, "bad duration for %s: %v", f.field, err)
	case "size":
		_, err := ParseSize(s)
		d = f.ds.Errorf("P004", path, "bad size for %s: %v", f.field, err)
	default:
		d = f.ds.Errorf("P007", path, "%q is not a valid %s: it must match %v", s, f.field, f.node["pattern"])
		if desc, ok := f.node["description"].(string); ok {
			d.Detail = desc
		}
	}
	d.Subject = f.idx.Value(path)
}

// notAllowed is a value outside its enum or const, with the allowed values and a
// did-you-mean.
func (f *schemaFailure) notAllowed() {
	path, node := f.path, f.node
	var allowed []string
	if e, ok := node["enum"].([]any); ok {
		for _, a := range e {
			allowed = append(allowed, fmt.Sprint(a))
		}
	} else {
		allowed = []string{fmt.Sprint(node["const"])}
	}
	v := lookup(f.root, path)
	var d *diag.Diagnostic
	if len(allowed) == 1 {
		d = f.ds.Errorf("P008", path, "%s must be %s, not %v", f.field, allowed[0], v)
	} else {
		d = f.ds.Errorf("P008", path, "%s must be one of %s, not %q", f.field, strings.Join(allowed, ", "), fmt.Sprint(v))
	}
	if got, ok := v.(string); ok {
		if s := suggest(got, allowed); s != "" {
			d.Summary += fmt.Sprintf("; did you mean %q?", s)
		}
	}
	if desc, ok := node["description"].(string); ok {
		d.Detail = desc
	}
	d.Subject = f.idx.Value(path)
}

// unknownFields lists the fields of obj that the object schema node neither declares nor
// matches with a pattern, sorted.
func unknownFields(node map[string]any, obj any) []string {
	m, _ := obj.(map[string]any)
	props, _ := node["properties"].(map[string]any)
	patterns, _ := node["patternProperties"].(map[string]any)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, ok := props[k]; ok {
			continue
		}
		matched := false
		for pat := range patterns {
			if re, err := regexp.Compile(pat); err == nil && re.MatchString(k) {
				matched = true
			}
		}
		if !matched {
			out = append(out, k)
		}
	}
	return out
}

// missingFields lists the fields the object schema node requires that obj lacks, in the
// schema's order.
func missingFields(node map[string]any, obj any) []string {
	m, _ := obj.(map[string]any)
	req, _ := node["required"].([]any)
	var out []string
	for _, r := range req {
		if name, ok := r.(string); ok {
			if _, present := m[name]; !present {
				out = append(out, name)
			}
		}
	}
	return out
}

// misspelt reports whether an unknown field of obj is a typo of the missing field name.
func misspelt(name string, node map[string]any, obj any) bool {
	if node["additionalProperties"] != false {
		return false
	}
	known := propertyNames(node)
	for _, u := range unknownFields(node, obj) {
		if suggest(u, known) == name {
			return true
		}
	}
	return false
}

// schemaNode resolves "…#/definitions/agent/properties/step" in the raw schema; for a
// keyword location it returns the schema object that holds the keyword.
func schemaNode(doc map[string]any, loc string) map[string]any {
	frag := loc
	if i := strings.IndexByte(loc, '#'); i >= 0 {
		frag = loc[i+1:]
	}
	var cur any = doc
	segs := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	for i, seg := range segs {
		if seg == "" {
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		next, ok := m[jsonptr.Unescape(seg)]
		if !ok {
			return nil
		}
		if _, isMap := next.(map[string]any); !isMap && i == len(segs)-1 {
			return m // a keyword's value: return the schema holding it
		}
		cur = next
	}
	m, _ := cur.(map[string]any)
	return m
}

func parentLoc(loc string) string { return loc[:strings.LastIndexByte(loc, '/')] }

func propertyNames(node map[string]any) []string {
	props, _ := node["properties"].(map[string]any)
	names := slices.Sorted(maps.Keys(props))
	return names
}

// constOf is the one value a property allows (its schema's const), as YAML would write it.
func constOf(node map[string]any, name string) (string, bool) {
	props, _ := node["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	v, ok := p["const"]
	if !ok {
		return "", false
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}

func describeField(node map[string]any, name string) string {
	props, _ := node["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	if desc, ok := p["description"].(string); ok {
		return fmt.Sprintf("%s: %s", name, firstSentence(desc))
	}
	return ""
}

// firstSentence is a description's first sentence: what a missing field is, on one line of
// a diagnostic. The whole description is the field's entry in docs/spec-reference.md.
func firstSentence(desc string) string {
	if i := strings.Index(desc, ". "); i >= 0 {
		return desc[:i+1]
	}
	return desc
}

func lookup(root any, path string) any {
	cur := root
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if seg == "" {
			continue
		}
		seg = jsonptr.Unescape(seg)
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			var i int
			if _, err := fmt.Sscan(seg, &i); err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func fieldName(path string) string {
	if path == "" {
		return "the spec"
	}
	return strings.TrimPrefix(strings.ReplaceAll(path, "/", "."), ".")
}

func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return fieldName(path)
}

func typeWords(t any) string {
	words := map[string]string{"object": "a map", "array": "a list", "string": "a string", "integer": "a whole number", "number": "a number", "boolean": "true or false", "null": "null"}
	switch v := t.(type) {
	case string:
		return words[v]
	case []any:
		var parts []string
		for _, x := range v {
			parts = append(parts, words[fmt.Sprint(x)])
		}
		return strings.Join(parts, " or ")
	}
	return fmt.Sprint(t)
}

// suggest returns the candidate closest to name when it is close enough to be a typo.
func suggest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := levenshtein(strings.ToLower(name), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= 2 || (bestD <= 3 && len(name) > 6) {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// Suggest exposes the did-you-mean matcher to reference checks in later stages.
func Suggest(name string, candidates []string) string { return suggest(name, candidates) }
