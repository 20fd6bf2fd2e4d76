// Package types writes handler types from the IR (what sqlc does for SQL): per agent class,
// the input type (the consumed event's detail) and the output type (agents.<class>.output),
// in Go, TypeScript or Python, with the JSON field names, required vs optional, enums, and
// bounds as comments. The JSON Schema subset that maps to types (objects with properties,
// arrays, scalars, string enums) becomes named types; anything else ($ref, combinators,
// open maps) becomes the language's "any JSON value", said so in a comment.
//
// Each language is a text/template over one model built here; nothing is concatenated.
// Spec text enters the model only as comment lines or string literals, and identifiers only
// mangled (text.go), so a spec from a fork cannot put code into a handler's build.
package types

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"maps"
	"slices"
	"strings"
	"text/template"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
)

// Languages fleetc writes types for.
const (
	Go         = "go"
	TypeScript = "typescript"
	Python     = "python"
)

// Langs lists the languages in the order help texts name them.
func Langs() []string { return []string{Go, TypeScript, Python} }

//go:embed templates/*.tmpl
var templatesFS embed.FS

// Decl is one named type: a record of fields or a string enum.
type Decl struct {
	Name   string
	Doc    []string    // comment lines, safe for the language (commentLines)
	Fields []Field     // a record
	Enum   []EnumValue // a string enum (Fields empty)
}

// EnumValue is one value of a string enum.
type EnumValue struct {
	Const   string // the Go constant's name, unique in the package
	Literal string // the value as the language's string literal
}

// Field is one property of a record.
type Field struct {
	Key      string   // the JSON name as the language's string literal
	Name     string   // the Go field's identifier, unique in its struct
	Tag      string   // the Go struct tag
	Type     string   // the language's type expression
	Required bool     // listed in required
	Doc      []string // comment lines: description, bounds
}

// File is the model one template renders.
type File struct {
	Fleet   string
	Package string // Go package name
	Decls   []Decl
	// Reversed is Decls with every type after the types it uses (Python evaluates them).
	Reversed []Decl
	// NeedJSON: the Go file uses json.RawMessage.
	NeedJSON bool
}

// lang maps schema kinds to one language's type expressions, and spec text to its
// literals and comments.
type lang struct {
	file, tmpl                             string
	str, integer, number, boolean, anyJSON string
	array                                  func(elem string) string
	optional                               func(t string) string // a non-required field's type
	literal                                func(s string) string // a string literal of s
	comment                                func(line string) string
	tag                                    func(json string, required bool) (string, error) // Go's struct tag; nil elsewhere
	// reserved are the names the template itself declares or imports.
	reserved []string
}

// TypeScript has one number type: an integer is a number there, as JSON.parse returns it.
var langs = map[string]lang{
	Go: {file: "types.go", tmpl: "go.tmpl", str: "string", integer: "int64", number: "float64", boolean: "bool", anyJSON: "json.RawMessage",
		array:    func(e string) string { return "[]" + e },
		optional: goOptional,
		literal:  goLiteral,
		comment:  func(l string) string { return l },
		tag:      goTag,
		reserved: []string{"json"}},
	TypeScript: {file: "types.ts", tmpl: "typescript.tmpl", str: "string", integer: "number", number: "number", boolean: "boolean", anyJSON: "unknown",
		array:    func(e string) string { return "Array<" + e + ">" },
		optional: func(t string) string { return t },
		literal:  tsLiteral,
		comment:  tsComment,
		reserved: []string{"Array"}},
	Python: {file: "fleet_types.py", tmpl: "python.tmpl", str: "str", integer: "int", number: "float", boolean: "bool", anyJSON: "Any",
		array:    func(e string) string { return "List[" + e + "]" },
		optional: func(t string) string { return t },
		literal:  pyLiteral,
		comment:  func(l string) string { return l },
		reserved: []string{"Any", "List", "Literal", "NotRequired", "TypedDict"}},
}

// goOptional makes a Go field type nullable when its zero value would be a real value.
func goOptional(t string) string {
	if strings.HasPrefix(t, "[]") || t == "json.RawMessage" {
		return t
	}
	return "*" + t
}

// Generate returns the types file of fleet f in language l.
func Generate(f *ir.Fleet, l string) (artifact.File, error) {
	lg, ok := langs[l]
	if !ok {
		return artifact.File{}, fmt.Errorf("unknown language %q (want %s)", l, strings.Join(Langs(), ", "))
	}
	b := &builder{lang: lg, names: names{}}
	for _, r := range lg.reserved {
		b.names[r] = true
	}
	// The class types are what handlers import: they get their names before any nested type.
	type classNames struct{ in, out string }
	top := make([]classNames, len(f.Agents))
	for i, a := range f.Agents {
		base := ident(a.Name)
		top[i] = classNames{b.names.unique(base + "Input"), b.names.unique(base + "Output")}
	}
	for i, a := range f.Agents {
		in, out := top[i].in, top[i].out
		switch {
		case a.Consumes != nil && a.Consumes.Event != nil:
			b.record(in, a.Consumes.Event.Detail, []string{
				fmt.Sprintf("%s is what class %s's handler receives: the detail of %s.", in, a.Name, a.Consumes.Event.DetailType)})
		default:
			b.alias(in, fmt.Sprintf("%s is what class %s's handler receives: its workflow step's input (any JSON object).", in, a.Name))
		}
		if a.Output != nil {
			b.record(out, a.Output, []string{
				fmt.Sprintf("%s is what class %s's handler returns (agents.%s.output); fleet-worker refuses any other result (HandlerOutputInvalid).", out, a.Name, a.Name)})
		} else {
			b.alias(out, fmt.Sprintf("%s is what class %s's handler returns: any JSON value (the class declares no output).", out, a.Name))
		}
	}
	if b.err != nil {
		return artifact.File{}, b.err
	}
	file := File{Fleet: oneLine(f.SpecName()), Package: goPackage(f.SpecName()), Decls: b.decls, Reversed: slices.Clone(b.decls)}
	slices.Reverse(file.Reversed)
	for _, d := range b.decls {
		file.NeedJSON = file.NeedJSON || len(d.Fields) == 0 && len(d.Enum) == 0
		for _, fl := range d.Fields {
			file.NeedJSON = file.NeedJSON || strings.Contains(fl.Type, "json.RawMessage")
		}
	}
	t, err := template.New(lg.tmpl).ParseFS(templatesFS, "templates/"+lg.tmpl)
	if err != nil {
		return artifact.File{}, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, file); err != nil {
		return artifact.File{}, err
	}
	out := buf.Bytes()
	if l == Go {
		if out, err = format.Source(out); err != nil {
			return artifact.File{}, fmt.Errorf("generated Go does not parse: %w", err)
		}
	}
	return artifact.File{Path: lg.file, Bytes: out}, nil
}

// builder collects declarations in a stable order: classes in the fleet's order, each
// record before the types of its fields.
type builder struct {
	lang  lang
	decls []Decl
	names names // the package's (module's) scope: types, and Go's enum constants
	err   error // the first property no field can carry
}

// doc is spec text as the language's comment lines.
func (b *builder) doc(texts ...string) []string {
	var out []string
	for _, t := range texts {
		for _, l := range commentLines(t) {
			out = append(out, b.lang.comment(l))
		}
	}
	return out
}

// alias declares name as "any JSON value" (a record with no fields renders as an open map).
func (b *builder) alias(name, doc string) {
	b.decls = append(b.decls, Decl{Name: name, Doc: b.doc(doc)})
}

// record declares a type for an object schema and returns its name, or the language's type
// for any other schema.
func (b *builder) record(name string, schema map[string]any, doc []string) string {
	if !isRecord(schema) {
		b.alias(name, strings.Join(append(doc, "The schema is not an object with properties: any JSON value."), " "))
		return name
	}
	if d, ok := schema["description"].(string); ok {
		doc = append(doc, d)
	}
	props, _ := schema["properties"].(map[string]any)
	req, _ := schema["required"].([]any)
	d := Decl{Name: name, Doc: b.doc(doc...)}
	i := len(b.decls)
	b.decls = append(b.decls, d)
	fields := names{}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		ps, _ := props[k].(map[string]any)
		required := slices.Contains(req, any(k))
		t := b.typeOf(name+ident(k), ps)
		if !required {
			t = b.lang.optional(t)
		}
		f := Field{Key: b.lang.literal(k), Name: fields.unique(ident(k)), Type: t, Required: required, Doc: b.doc(fieldDoc(ps)...)}
		if b.lang.tag != nil {
			var err error
			if f.Tag, err = b.lang.tag(k, required); err != nil && b.err == nil {
				b.err = err
			}
		}
		d.Fields = append(d.Fields, f)
	}
	b.decls[i] = d
	return name
}

// typeOf is the language's type for schema s; a nested record or enum is declared under
// base, made unique.
func (b *builder) typeOf(base string, s map[string]any) string {
	if e, ok := stringEnum(s); ok {
		name := b.names.unique(base)
		d := Decl{Name: name, Doc: b.doc(fmt.Sprintf("%s is one of %s.", name, strings.Join(e, ", ")))}
		for _, v := range e {
			d.Enum = append(d.Enum, EnumValue{Const: b.names.unique(name + ident(v)), Literal: b.lang.literal(v)})
		}
		b.decls = append(b.decls, d)
		return name
	}
	switch t, _ := s["type"].(string); t {
	case "string":
		return b.lang.str
	case "integer":
		return b.lang.integer
	case "number":
		return b.lang.number
	case "boolean":
		return b.lang.boolean
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			return b.lang.array(b.lang.anyJSON)
		}
		return b.lang.array(b.typeOf(base+"Item", items))
	case "object":
		if isRecord(s) {
			return b.record(b.names.unique(base), s, nil)
		}
	}
	return b.lang.anyJSON
}

func isRecord(s map[string]any) bool {
	props, ok := s["properties"].(map[string]any)
	t, _ := s["type"].(string)
	return ok && len(props) > 0 && (t == "object" || t == "")
}

// stringEnum is s's enum when every value is a string.
func stringEnum(s map[string]any) ([]string, bool) {
	vals, ok := s["enum"].([]any)
	if !ok {
		if c, isConst := s["const"].(string); isConst {
			return []string{c}, true
		}
		return nil, false
	}
	var out []string
	for _, v := range vals {
		str, isStr := v.(string)
		if !isStr {
			return nil, false
		}
		out = append(out, str)
	}
	return out, len(out) > 0
}

// fieldDoc is a property's description and bounds, as comment lines.
func fieldDoc(s map[string]any) []string {
	var doc []string
	if d, ok := s["description"].(string); ok {
		doc = append(doc, d)
	}
	var bounds []string
	if e, ok := s["enum"].([]any); ok {
		if _, named := stringEnum(s); !named {
			bounds = append(bounds, fmt.Sprintf("one of %v", e))
		}
	}
	for _, kw := range []string{"minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "pattern", "format"} {
		if v, ok := s[kw]; ok {
			bounds = append(bounds, fmt.Sprintf("%s %v", kw, v))
		}
	}
	if len(bounds) > 0 {
		doc = append(doc, strings.Join(bounds, ", ")+".")
	}
	return doc
}

// goPackage is a Go package name from the fleet's name.
func goPackage(fleet string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(fleet) {
		if isASCIILetter(r) || '0' <= r && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || '0' <= b.String()[0] && b.String()[0] <= '9' {
		return "fleettypes"
	}
	return b.String() + "types"
}
