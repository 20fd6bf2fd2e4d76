package schemas_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"text/template"
	"unicode"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/schemas"
)

var update = flag.Bool("update", false, "rewrite docs/spec-reference.md from the schema")

const (
	referencePage = "../docs/spec-reference.md"
	referenceTmpl = "testdata/spec-reference.md.tmpl"
)

// TestSpecReference: docs/spec-reference.md is generated from fleet.schema.json (descriptions,
// limits, examples) and ir.Defaults (defaults), so it fails when either changes without it:
//
//	go test ./schemas -run TestSpecReference -update
func TestSpecReference(t *testing.T) {
	want, err := specReference()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(referencePage, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("docs/spec-reference.md is not current (go test ./schemas -run TestSpecReference -update)")
	}
}

// specReference renders the page: the template's prose around one section per part.
func specReference() ([]byte, error) {
	raw, err := schemas.FS.ReadFile("fleet.schema.json")
	if err != nil {
		return nil, err
	}
	root, err := decodeOrdered(raw)
	if err != nil {
		return nil, err
	}
	r := newReference(root.(*object), schemaDefaults())
	if err := r.plan(); err != nil {
		return nil, err
	}
	tmpl, err := template.ParseFiles(referenceTmpl)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = tmpl.Execute(&out, map[string]string{
		"Description": r.root.str("description"),
		"Contents":    r.contents(),
		"Parts":       r.parts(),
	})
	return append(bytes.TrimRight(out.Bytes(), "\n"), '\n'), err
}

// object is a JSON object that keeps its keys in the order the file writes them
// (encoding/json's maps do not), so the page follows the schema's order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) any { return o.vals[k] }

func (o *object) obj(k string) *object { v, _ := o.vals[k].(*object); return v }

func (o *object) str(k string) string { v, _ := o.vals[k].(string); return v }

// decodeOrdered decodes JSON into *object, []any, string, json.Number, bool and nil.
func decodeOrdered(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return decodeValue(d)
}

func decodeValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &object{vals: map[string]any{}}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k.(string))
			o.vals[k.(string)] = v
		}
		_, err = d.Token()
		return o, err
	case json.Delim('['):
		var a []any
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = d.Token()
		return a, err
	}
	return tok, nil
}

// schemaDefaults maps each schema pointer that ir.Defaults documents to the defaults it
// holds, written as fleet.yaml would (4d, 200KiB) and phrased as its `phrase` tag says.
func schemaDefaults() map[string][]string {
	out := map[string][]string{}
	v := reflect.ValueOf(ir.Defaults)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		text := "`" + irtest.FormatDefault(v.Field(i).Interface()) + "`"
		if p := f.Tag.Get("phrase"); p != "" {
			text = fmt.Sprintf(p, text)
		}
		for _, ptr := range strings.Fields(f.Tag.Get("schema")) {
			out[ptr] = append(out[ptr], text)
		}
	}
	return out
}

// section is one heading of the page: an object of the schema (or a map's value) at a
// spec path such as agents.<class>.scaling.
type section struct {
	ptr, path string
	s         *object
	top       bool // a top-level part: its own facts are listed, no parent table has them
}

type reference struct {
	root     *object
	defaults map[string][]string
	sections []*section
	anchor   map[string]string // schema pointer of a section → its heading's anchor
	scalars  []string          // definitions that are value types (duration, size)
}

func newReference(root *object, defaults map[string][]string) *reference {
	return &reference{root: root, defaults: defaults, anchor: map[string]string{}}
}

// plan lists the sections depth-first in schema order. A definition is rendered once, at
// its first use, and every later use links there.
func (r *reference) plan() error {
	defs := r.root.obj("definitions")
	for _, name := range defs.keys {
		if !hasShape(defs.obj(name)) {
			r.scalars = append(r.scalars, name)
			r.anchor["#/definitions/"+name] = slug(name)
		}
	}
	props := r.root.obj("properties")
	for _, k := range props.keys {
		r.add(&section{ptr: "#/properties/" + k, path: k, s: props.obj(k), top: true})
	}
	seen := map[string]string{}
	for _, s := range r.sections {
		a := slug(s.path)
		if other, dup := seen[a]; dup {
			return fmt.Errorf("sections %s and %s share the anchor #%s", other, s.path, a)
		}
		seen[a] = s.path
	}
	return nil
}

// hasShape: the schema has fields or map values of its own, so it needs a section.
func hasShape(s *object) bool {
	if s == nil {
		return false
	}
	if s.obj("properties") != nil || s.obj("additionalProperties") != nil {
		return true
	}
	if it := s.obj("items"); it != nil {
		return hasShape(it)
	}
	return false
}

func (r *reference) add(sec *section) {
	r.sections = append(r.sections, sec)
	r.anchor[sec.ptr] = slug(sec.path)
	r.children(sec.ptr, sec.path, sec.s)
}

// children adds the sections of the fields, map values and list items of s.
func (r *reference) children(ptr, path string, s *object) {
	if props := s.obj("properties"); props != nil {
		for _, k := range props.keys {
			r.child(ptr+"/properties/"+k, path+"."+k, props.obj(k))
		}
	}
	if ap := s.obj("additionalProperties"); ap != nil {
		r.child(ptr+"/additionalProperties", path+".<"+keyName(path)+">", ap)
	}
	if it := s.obj("items"); it != nil {
		r.child(ptr+"/items", path+"[]", it)
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		branches, _ := s.get(kw).([]any)
		for i, b := range branches {
			br := b.(*object)
			name := fmt.Sprintf("alternative %d", i+1)
			if ref := br.str("$ref"); ref != "" {
				name = ref[strings.LastIndex(ref, "/")+1:]
			}
			r.child(fmt.Sprintf("%s/%s/%d", ptr, kw, i), path+" ("+name+")", br)
		}
	}
}

// child adds the section of s, or of the definition it refers to at its first use; a
// shapeless child (a scalar, a list of scalars) is a row of its parent's table only.
func (r *reference) child(ptr, path string, s *object) {
	if ref := s.str("$ref"); ref != "" {
		if _, done := r.anchor[ref]; done || !strings.HasPrefix(ref, "#/definitions/") || strings.Count(ref, "/") != 2 {
			return
		}
		r.add(&section{ptr: ref, path: path, s: r.resolve(ref)})
		return
	}
	if s.obj("properties") != nil || (s.obj("additionalProperties") != nil && hasShape(s.obj("additionalProperties"))) {
		r.add(&section{ptr: ptr, path: path, s: s})
		return
	}
	r.children(ptr, path, s)
}

// keyName is what a map's keys are called in its path: agents.<class>, models.<policy>.
func keyName(path string) string {
	switch path[strings.LastIndex(path, ".")+1:] {
	case "agents":
		return "class"
	case "models":
		return "policy"
	case "events":
		return "detail-type"
	case "tags":
		return "key"
	}
	return "name"
}

func (r *reference) resolve(ptr string) *object {
	cur := r.root
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "#/"), "/") {
		cur = cur.obj(seg)
	}
	return cur
}

// slug is the anchor GitHub gives a heading: lowercased, spaces to '-', punctuation other
// than '-' and '_' dropped (TestDocsCiteExistingFiles checks every link against it).
func slug(heading string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(heading) {
		switch {
		case c == ' ':
			b.WriteRune('-')
		case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsNumber(c):
			b.WriteRune(c)
		}
	}
	return b.String()
}

func (r *reference) contents() string {
	var b strings.Builder
	for _, s := range r.sections {
		indent := "  "
		if s.top {
			indent = ""
		}
		fmt.Fprintf(&b, "%s- [`%s`](#%s)\n", indent, s.path, slug(s.path))
	}
	for _, name := range r.scalars {
		fmt.Fprintf(&b, "- [%s](#%s)\n", name, slug(name))
	}
	return b.String()
}

func (r *reference) parts() string {
	var b strings.Builder
	for _, s := range r.sections {
		r.section(&b, s)
	}
	b.WriteString("## Value types\n\n")
	for _, name := range r.scalars {
		ptr := "#/definitions/" + name
		s := r.resolve(ptr)
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", name, s.str("description"))
		r.facts(&b, ptr, s)
	}
	return b.String()
}

// section writes a heading, the object's description, its own facts when no table row
// has them, its alternatives and map keys, and a table of its fields.
func (r *reference) section(b *strings.Builder, sec *section) {
	level := "###"
	if sec.top {
		level = "##"
	}
	fmt.Fprintf(b, "%s `%s`\n\n", level, sec.path)
	if d := sec.s.str("description"); d != "" {
		fmt.Fprintf(b, "%s\n\n", d)
	}
	if sec.top {
		r.facts(b, sec.ptr, sec.s)
	}
	if alt := alternatives(sec.s); alt != "" {
		fmt.Fprintf(b, "%s\n\n", alt)
	}
	if ap := sec.s.obj("additionalProperties"); ap != nil {
		fmt.Fprintf(b, "A map from each key%s to: %s.\n\n", keyLimits(sec.s), r.typeOf(sec.ptr+"/additionalProperties", ap))
	}
	props := sec.s.obj("properties")
	if props == nil {
		return
	}
	required := map[string]bool{}
	if req, ok := sec.s.get("required").([]any); ok {
		for _, k := range req {
			required[k.(string)] = true
		}
	}
	b.WriteString("| field | type | default | limits | description | example |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, k := range props.keys {
		ptr := sec.ptr + "/properties/" + k
		f := props.obj(k)
		lim := limits(r.target(f))
		if required[k] {
			lim = append([]string{"**required**"}, lim...)
		}
		row := []string{"`" + k + "`", r.typeOf(ptr, f), r.defaultOf(ptr, f), strings.Join(lim, ", "), r.describe(f), example(r.target(f))}
		for i, c := range row {
			row[i] = cell(c)
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(row, " | "))
	}
	b.WriteString("\n")
}

// facts lists a top-level part's or a value type's own type, default, limits and example.
func (r *reference) facts(b *strings.Builder, ptr string, s *object) {
	t := r.typeOf(ptr, s)
	if a, ok := r.anchor[ptr]; ok {
		t = strings.TrimSuffix(strings.TrimPrefix(t, "["), "](#"+a+")")
	}
	fmt.Fprintf(b, "- type: %s\n", t)
	if r.root.get("required") != nil && strings.Count(ptr, "/") == 2 && strings.HasPrefix(ptr, "#/properties/") {
		for _, k := range r.root.get("required").([]any) {
			if "#/properties/"+k.(string) == ptr {
				b.WriteString("- **required**\n")
			}
		}
	}
	if d := r.defaultOf(ptr, s); d != "" {
		fmt.Fprintf(b, "- default: %s\n", d)
	}
	if l := limits(s); len(l) > 0 {
		fmt.Fprintf(b, "- limits: %s\n", strings.Join(l, ", "))
	}
	if e := example(s); e != "" {
		fmt.Fprintf(b, "- example: %s\n", e)
	}
	b.WriteString("\n")
}

// target is the schema a field's limits and examples are read from: the one it refers to
// when it only names another field (environment overrides), else itself.
func (r *reference) target(f *object) *object {
	if ref := f.str("$ref"); ref != "" && (!strings.HasPrefix(ref, "#/definitions/") || strings.Count(ref, "/") > 2) {
		return r.resolve(ref)
	}
	return f
}

// describe is a field's description; a field that only names another says where it is.
func (r *reference) describe(f *object) string {
	d := f.str("description")
	if ref := f.str("$ref"); ref != "" && r.target(f) != f {
		if a, ok := r.fieldAnchor(ref); ok {
			d = strings.TrimSpace(d + " Overrides [" + a.text + "](#" + a.anchor + ").")
		}
	}
	if alt := alternatives(f); alt != "" && !hasShape(f) {
		d = strings.TrimSpace(d + " " + alt)
	}
	return d
}

type link struct{ text, anchor string }

// fieldAnchor is the section whose table has the field at ptr, or the field's own section.
func (r *reference) fieldAnchor(ptr string) (link, bool) {
	for _, s := range r.sections {
		if s.ptr == ptr {
			return link{"`" + s.path + "`", slug(s.path)}, true
		}
	}
	i := strings.LastIndex(ptr, "/properties/")
	for _, s := range r.sections {
		if i > 0 && s.ptr == ptr[:i] {
			return link{"`" + s.path + "." + ptr[i+len("/properties/"):] + "`", slug(s.path)}, true
		}
	}
	return link{}, false
}

// typeOf writes a schema's type, linking to the section or value type that details it.
func (r *reference) typeOf(ptr string, s *object) string {
	if ref := s.str("$ref"); ref != "" {
		if name := ref[strings.LastIndex(ref, "/")+1:]; contains(r.scalars, name) && strings.Count(ref, "/") == 2 {
			return "[" + name + "](#" + r.anchor[ref] + ")"
		}
		return r.typeOf(ref, r.resolve(ref))
	}
	if a, ok := r.anchor[ptr]; ok && hasShape(s) && s.obj("items") == nil {
		kind := "object"
		if s.obj("properties") == nil {
			kind = "map"
		}
		return "[" + kind + "](#" + a + ")"
	}
	if it := s.obj("items"); it != nil && s.get("type") == "array" {
		return "list of " + r.typeOf(ptr+"/items", it)
	}
	if ap := s.obj("additionalProperties"); ap != nil {
		return "map of " + r.typeOf(ptr+"/additionalProperties", ap)
	}
	switch {
	case s.get("const") != nil:
		return jsonType(s.get("const"))
	case s.get("enum") != nil:
		return jsonType(s.get("enum").([]any)[0])
	}
	if t := s.str("type"); t != "" {
		return t
	}
	if ts, ok := s.get("type").([]any); ok {
		var alts []string
		for _, t := range ts {
			if t == "array" && s.obj("items") != nil {
				alts = append(alts, "list of "+r.typeOf(ptr+"/items", s.obj("items")))
			} else {
				alts = append(alts, t.(string))
			}
		}
		return strings.Join(alts, " or ")
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		branches, ok := s.get(kw).([]any)
		if !ok {
			continue
		}
		var alts []string
		for i, b := range branches {
			alts = append(alts, r.typeOf(fmt.Sprintf("%s/%s/%d", ptr, kw, i), b.(*object)))
		}
		return strings.Join(alts, " or ")
	}
	return "any"
}

func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case bool:
		return "boolean"
	}
	return "any"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// defaultOf is the default ir.Defaults holds for a pointer (or for the field it names).
func (r *reference) defaultOf(ptr string, s *object) string {
	p := strings.TrimPrefix(ptr, "#")
	if ref := s.str("$ref"); ref != "" && len(r.defaults[p]) == 0 {
		p = strings.TrimPrefix(ref, "#")
	}
	return strings.Join(r.defaults[p], ", ")
}

// limits lists a schema's constraints in the order a reader checks them.
func limits(s *object) []string {
	var out []string
	if e, ok := s.get("enum").([]any); ok {
		var vs []string
		for _, v := range e {
			vs = append(vs, "`"+scalar(v)+"`")
		}
		out = append(out, "one of "+strings.Join(vs, ", "))
	}
	if c := s.get("const"); c != nil {
		out = append(out, "only `"+scalar(c)+"`")
	}
	for _, l := range []struct{ key, text string }{
		{"minimum", "≥ %s"}, {"exclusiveMinimum", "> %s"}, {"maximum", "≤ %s"}, {"exclusiveMaximum", "< %s"},
		{"minLength", "at least %s characters"}, {"maxLength", "at most %s characters"},
		{"minItems", "at least %s items"}, {"maxItems", "at most %s items"},
		{"minProperties", "at least %s entries"}, {"maxProperties", "at most %s entries"},
	} {
		if v := s.get(l.key); v != nil {
			text := fmt.Sprintf(l.text, scalar(v))
			if scalar(v) == "1" {
				text = singular.Replace(text)
			}
			out = append(out, text)
		}
	}
	if s.get("uniqueItems") == true {
		out = append(out, "no duplicates")
	}
	if p := s.str("pattern"); p != "" {
		out = append(out, "pattern `"+p+"`")
	}
	if it := s.obj("items"); it != nil {
		if l := limits(it); len(l) > 0 {
			out = append(out, "each item: "+strings.Join(l, ", "))
		}
	}
	if deps := s.obj("dependencies"); deps != nil {
		for _, k := range deps.keys {
			if req, ok := deps.get(k).([]any); ok {
				out = append(out, "`"+k+"` needs "+codeList(req, " and "))
			}
		}
	}
	return out
}

var singular = strings.NewReplacer("characters", "character", "items", "item", "entries", "entry")

// keyLimits are the constraints of a map's keys (propertyNames).
func keyLimits(s *object) string {
	pn := s.obj("propertyNames")
	if pn == nil {
		return ""
	}
	return " (" + strings.Join(limits(pn), ", ") + ")"
}

// alternatives lists a schema's oneOf/anyOf branches: the fields each requires, or its type.
func alternatives(s *object) string {
	for _, k := range []struct{ key, text string }{{"oneOf", "Exactly one of"}, {"anyOf", "At least one of"}} {
		branches, ok := s.get(k.key).([]any)
		if !ok {
			continue
		}
		var alts []string
		for _, br := range branches {
			alts = append(alts, branch(br.(*object)))
		}
		return k.text + ": " + strings.Join(alts, "; ") + "."
	}
	return ""
}

func branch(b *object) string {
	if req, ok := b.get("required").([]any); ok {
		return codeList(req, " with ")
	}
	if l := limits(b); len(l) > 0 {
		t := b.str("type")
		if t == "" {
			t = "a value"
		}
		return t + " (" + strings.Join(l, ", ") + ")"
	}
	if t := b.str("type"); t != "" {
		return t
	}
	if n := b.obj("not"); n != nil {
		return "anything but " + branch(n)
	}
	return "a value"
}

func codeList(vs []any, sep string) string {
	var out []string
	for _, v := range vs {
		out = append(out, "`"+scalar(v)+"`")
	}
	return strings.Join(out, sep)
}

// example is the schema's first example as fleet.yaml writes it (flow style for lists and maps).
func example(s *object) string {
	ex, ok := s.get("examples").([]any)
	if !ok || len(ex) == 0 {
		return ""
	}
	var out []string
	for _, e := range ex {
		out = append(out, "`"+flow(e)+"`")
	}
	return strings.Join(out, ", ")
}

// flow writes a value in YAML flow style, maps in the schema's key order.
func flow(v any) string {
	switch x := v.(type) {
	case *object:
		var kv []string
		for _, k := range x.keys {
			kv = append(kv, flow(k)+": "+flow(x.vals[k]))
		}
		return "{" + strings.Join(kv, ", ") + "}"
	case []any:
		var items []string
		for _, e := range x {
			items = append(items, flow(e))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case string:
		if x == "" || strings.ContainsAny(x, ":{}[],#&*!|>'\"%@`") || x != strings.TrimSpace(x) {
			b, _ := json.Marshal(x)
			return string(b)
		}
	}
	return scalar(v)
}

// scalar writes a value: strings bare, everything else as JSON (which YAML reads).
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(plain(v))
	return string(b)
}

// plain turns an ordered object back into values json.Marshal writes, keys sorted.
func plain(v any) any {
	switch x := v.(type) {
	case *object:
		m := map[string]any{}
		for _, k := range x.keys {
			m[k] = plain(x.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// cell makes text safe in a table cell: one line, '|' escaped.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
