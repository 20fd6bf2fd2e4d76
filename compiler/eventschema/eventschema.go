// Package eventschema generates, per event contract, the JSON Schema the EventBridge Schema
// Registry stores (type JSONSchemaDraft4) and an example event that validates against it:
//
//	schemas/<detail-type>.json           the full EventBridge envelope, detail = the contract
//	schemas/examples/<detail-type>.json  a deterministic example event
//
// The registry takes draft-04 only, so the detail schema (written in whatever draft the user
// knows) is translated: const → enum, numeric exclusiveMinimum/Maximum → the draft-04 boolean
// form, $defs → definitions (hoisted to the document root, refs rewritten), prefixItems →
// items, dependentRequired/dependentSchemas → dependencies; annotations draft-04 lacks
// (examples, $comment, readOnly, ...) and formats it does not define are dropped. Keywords
// with no draft-04 equivalent (if/then/else, contains, propertyNames, unevaluated*) are
// errors (G003) at the offending keyword. Nothing non-standard (no x- extensions) is written:
// the registry gets plain draft-04.
//
// Every schema is compiled against the draft-04 metaschema and every example validated
// against its schema before they are returned, so an invalid artifact is a diagnostic, never
// a file.
package eventschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetc/fleetc/internal/genjson"
	"github.com/fleetc/fleetc/schemas/awslimits"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// Draft04 is the $schema of every generated schema.
const Draft04 = "http://json-schema.org/draft-04/schema#"

// Code is the diagnostic code of detail schemas that cannot be expressed in draft-04. Its
// errors point at the offending keyword of the spec's detail schema; the same code warns
// about dropped unknown keywords and an example event that could not be generated.
const Code = "G003"

// CodeInfo documents one diagnostic code this package emits.
type CodeInfo = diag.Code

// Codes lists every diagnostic code Generate can emit.
func Codes() []CodeInfo {
	return []CodeInfo{{
		ID: Code, Severity: diag.Error,
		Summary: "event detail schema cannot be expressed in JSON Schema draft-04",
		Explain: "The EventBridge Schema Registry stores JSON Schema draft-04 only, so fleetc translates each event's detail schema (const, numeric exclusive bounds, $defs, prefixItems and dependentRequired have draft-04 forms). " +
			"Keywords with no draft-04 equivalent (if/then/else, contains, propertyNames, unevaluatedProperties/Items, $anchor, $dynamicRef), a $ref that points outside the schema or at a definition that does not exist, " +
			"and values draft-04's metaschema rejects (a negative minLength, an unknown type, an invalid regex) are errors at the offending keyword; the event then gets no schema file. " +
			"Restate the constraint with draft-04 keywords (anyOf/oneOf/not, enum, dependencies) or drop it. The same code warns when an unknown keyword is dropped (usually a typo) " +
			"or when no example event satisfying the schema could be generated (the schema itself is still written).",
	}, {
		ID: ScheduleCode, Severity: diag.Error,
		Summary: "schedule detail does not satisfy its event's schema",
		Explain: "A schedule (schedules.<name>) puts its event on the bus with the same detail every time it fires. fleetc validates that event, envelope and detail, against the event's generated draft-04 schema, " +
			"so a missing required field or a wrong type is caught when the spec is validated rather than by every consumer, every period, after deploy. Fix the schedule's detail (or the event's schema).",
	}, {
		ID: ApprovalCode, Severity: diag.Error,
		Summary: "approval notify event's schema refuses what fleetc announces",
		Explain: "An approval step's notify event is put on the bus by fleetc's approval recorder with exactly {execution_id, state, trace_id, timeout_seconds} in its detail (never the task token: docs/approvals.md). " +
			"fleetc validates such an event against the notify event's generated schema, so a contract that requires another field, or types these differently, is refused before its consumers receive events that break it. " +
			"Declare execution_id, state and trace_id as strings and timeout_seconds as an integer, and require nothing else.",
	}}
}

// ScheduleCode is the diagnostic code of a schedule whose detail its event's schema refuses.
const ScheduleCode = "G004"

// ApprovalCode is the diagnostic code of an approval whose notify event's schema refuses the
// detail fleetc's approval recorder puts on the bus.
const ApprovalCode = "G005"

// checkScheduleDetail validates the event a schedule puts on the bus against the event's
// generated schema, as a consumer would receive it: a schedule that would fire wrong events
// every period is refused before it is deployed.
func checkScheduleDetail(f *ir.Fleet, sc *ir.Schedule, schema []byte, ds *diag.Diagnostics) {
	e := sc.Event
	if err := validDetail(f, e, sc.Detail, schema); err != nil {
		d := ds.Errorf(ScheduleCode, sc.Path+"/detail", "schedule %s: its detail is not a valid %s event: %v", sc.Name, e.DetailType, err)
		d.Detail = "Every event the schedule puts on the bus carries exactly this detail; make it satisfy the event's schema (schemas/" + e.DetailType + ".json)."
	}
}

// checkApprovalNotify validates the detail the approval recorder announces (compiler/asl:
// execution_id, state, trace_id, timeout_seconds) against the notify event's schema.
func checkApprovalNotify(f *ir.Fleet, w *ir.Workflow, st *ir.Step, schema []byte, ds *diag.Diagnostics) {
	e := st.Approval.Notify
	detail := map[string]any{
		"execution_id":    "arn:aws:states:" + f.Region + ":" + ExampleAccount + ":execution:" + w.StateMachineName + ":example",
		"state":           st.Name,
		"trace_id":        "trace-0001",
		"timeout_seconds": ir.Seconds(st.Timeout),
	}
	if err := validDetail(f, e, detail, schema); err != nil {
		d := ds.Errorf(ApprovalCode, st.Path+"/approval/notify", "approval %s: the %s event fleetc announces it with does not satisfy that event's schema: %v", st.Name, e.DetailType, err)
		d.Detail = "The approval recorder puts exactly {execution_id, state, trace_id, timeout_seconds} (strings, and an integer) in the detail: declare those properties and require no others."
	}
}

// validDetail validates an event of e with this detail, as a consumer receives it.
func validDetail(f *ir.Fleet, e *ir.Event, detail any, schema []byte) error {
	d, err := normalize(detail)
	if err != nil {
		return err
	}
	eb, err := encode(map[string]any{
		"version": "0", "id": ExampleID, "detail-type": e.DetailType, "source": e.Source,
		"account": ExampleAccount, "time": ExampleTime, "region": f.Region, "resources": []any{},
		"detail": d,
	})
	if err != nil {
		return err
	}
	return validate(schema, eb)
}

// Fixed envelope values of the example events: same bytes every run.
const (
	ExampleID      = "00000000-0000-4000-8000-000000000000"
	ExampleTime    = "2026-01-01T00:00:00Z"
	ExampleAccount = "123456789012"
)

// SchemaPath and ExamplePath are the artifact paths of an event's schema and example.
func SchemaPath(e *ir.Event) string  { return "schemas/" + e.DetailType + ".json" }
func ExamplePath(e *ir.Event) string { return "schemas/examples/" + e.DetailType + ".json" }

// Generate returns a schema and an example per event. An event whose detail schema cannot be
// translated gets error diagnostics and no files; one whose example cannot be generated
// keeps its schema and gets a warning.
func Generate(f *ir.Fleet) ([]artifact.File, diag.Diagnostics) {
	var files []artifact.File
	var ds diag.Diagnostics
	schemas := map[*ir.Event][]byte{}
	for _, e := range f.Events {
		ef := event(f, e, &ds)
		if len(ef) > 0 && ef[0].Path == SchemaPath(e) {
			schemas[e] = ef[0].Bytes
		}
		files = append(files, ef...)
	}
	for _, sc := range f.Schedules {
		if sb := schemas[sc.Event]; sb != nil {
			checkScheduleDetail(f, sc, sb, &ds)
		}
	}
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			if st.Approval == nil {
				continue
			}
			if sb := schemas[st.Approval.Notify]; sb != nil {
				checkApprovalNotify(f, w, st, sb, &ds)
			}
		}
	}
	for _, a := range f.Agents {
		if a.Output != nil {
			checkOutput(a, &ds)
		}
	}
	if f.Index != nil {
		f.Index.Locate(ds)
	}
	return files, ds.Sorted()
}

func event(f *ir.Fleet, e *ir.Event, ds *diag.Diagnostics) []artifact.File {
	detail, err := normalize(e.Detail)
	if err != nil {
		ds.Errorf(Code, e.Path+"/detail", "event %s: detail schema is not JSON: %v", e.DetailType, err)
		return nil
	}
	var eds diag.Diagnostics
	tr := &translator{base: e.Path + "/detail", ds: &eds}
	out := tr.document(detail)
	// The example generator honors formats draft-04 does not know (uuid, date, ...).
	hints := (&translator{base: e.Path + "/detail", ds: new(diag.Diagnostics), keepFormats: true}).document(detail)
	schema := envelope(e, out)
	tr.checkRefs(schema)
	*ds = append(*ds, eds...)
	if eds.HasErrors() {
		return nil
	}
	sb, err := encode(schema)
	if err == nil {
		_, err = compile(sb)
	}
	if err != nil {
		at, msg := locate(tr, detail, err)
		d := ds.Errorf(Code, at, "event %s: %s", e.DetailType, msg)
		d.Detail = "The EventBridge Schema Registry takes draft-04 only, and draft-04's metaschema rejects this value. Fix it at this keyword."
		return nil
	}
	files := []artifact.File{{Path: SchemaPath(e), Bytes: sb}}

	hintDoc := envelope(e, hints)
	g := &generator{root: hintDoc, left: maxEntryBytes}
	example := map[string]any{
		"version":     "0",
		"id":          ExampleID,
		"detail-type": e.DetailType,
		"source":      e.Source,
		"account":     ExampleAccount,
		"time":        ExampleTime,
		"region":      f.Region,
		"resources":   []any{},
		"detail":      g.value(hintDoc["properties"].(map[string]any)["detail"], "detail", 0),
	}
	if size := entrySize(e, example["detail"]); g.left < 0 || size > maxEntryBytes {
		d := ds.Errorf(Code, e.Path+"/detail", "event %s: the smallest event this detail schema allows is over %d bytes, the most one PutEvents entry may carry", e.DetailType, maxEntryBytes)
		d.Detail = "No event of this type could ever be sent. Lower minLength, minItems or the number of required fields; large payloads travel by claim-check (an S3 reference in the detail)."
		return files
	}
	eb, err := encode(example)
	if err == nil {
		err = validate(sb, eb)
	}
	if err != nil {
		d := ds.Warnf(Code, e.Path+"/detail", "event %s: no example event could be generated: %v", e.DetailType, err)
		d.Detail = "The schema is still generated; patterns or combinators fleetc cannot satisfy keep it from inventing a valid example."
		return files
	}
	return append(files, artifact.File{Path: ExamplePath(e), Bytes: eb})
}

// maxEntryBytes is the most one PutEvents entry may carry: an entry alone in its request may
// use the whole request size (the seed "Event-Driven AI Agent Fleets").
const maxEntryBytes = awslimits.PutEventsMaxRequestBytes

// entrySize is an event's PutEvents entry size as AWS computes it: Source, DetailType and
// the compact Detail (the worker sets no Time).
func entrySize(e *ir.Event, detail any) int {
	b, err := json.Marshal(detail)
	if err != nil {
		return 0 // encode reports it below
	}
	return awslimits.PutEventsEntrySize(e.Source, e.DetailType, b, nil, false)
}

// versionNote ends the envelope's description: the registry's copy of the contract version.
func versionNote(v int) string { return fmt.Sprintf(" Contract version %d.", v) }

var versionNoteRE = regexp.MustCompile(` Contract version [0-9]+\.$`)

// DescriptionWithoutVersion is an envelope description without its version note, so that a
// version bump alone is not read as a changed description.
func DescriptionWithoutVersion(desc string) string { return versionNoteRE.ReplaceAllString(desc, "") }

// checkOutput holds a class's output schema to the dialect of event details: it is
// translated and compiled like a detail (the draft-04 envelope stands in for the handler's
// answer), so a keyword an event could not use is refused at the same place with the same code.
// fleet-worker validates results against the schema as written; nothing is written here.
func checkOutput(a *ir.Agent, ds *diag.Diagnostics) {
	out, err := normalize(a.Output)
	if err != nil {
		ds.Errorf(Code, a.Path+"/output", "class %s: output schema is not JSON: %v", a.Name, err)
		return
	}
	var eds diag.Diagnostics
	tr := &translator{base: a.Path + "/output", ds: &eds}
	doc := envelope(&ir.Event{DetailType: a.Name + ".output", Source: "fleet"}, tr.document(out))
	tr.checkRefs(doc)
	*ds = append(*ds, eds...)
	if eds.HasErrors() {
		return
	}
	sb, err := encode(doc)
	if err == nil {
		_, err = compile(sb)
	}
	if err != nil {
		at, msg := locate(tr, out, err)
		d := ds.Errorf(Code, at, "class %s output: %s", a.Name, msg)
		d.Detail = "An output schema is held to the dialect of event details (draft-04 after translation). Fix it at this keyword."
	}
}

// ExampleOf returns a value that satisfies schema (a detail or handler-output schema as the
// spec writes it), generated as the example events are: deterministic, same bytes every run.
func ExampleOf(schema map[string]any) (any, error) {
	v, err := normalize(schema)
	if err != nil {
		return nil, err
	}
	hints := (&translator{ds: new(diag.Diagnostics), keepFormats: true}).document(v)
	doc := envelope(&ir.Event{DetailType: "example", Source: "fleet"}, hints)
	g := &generator{root: doc, left: maxEntryBytes}
	v = g.value(doc["properties"].(map[string]any)["detail"], "detail", 0)
	if g.left < 0 {
		return nil, fmt.Errorf("the smallest value the schema allows is over %d bytes", maxEntryBytes)
	}
	return v, nil
}

// envelope wraps a translated detail schema in the EventBridge event envelope.
func envelope(e *ir.Event, t translated) map[string]any {
	desc := e.Description
	if desc == "" {
		desc = fmt.Sprintf("%s events from %s.", e.DetailType, e.Source)
	}
	desc += versionNote(e.Version)
	str := func() map[string]any { return map[string]any{"type": "string"} }
	doc := map[string]any{
		"$schema":     Draft04,
		"title":       e.DetailType,
		"description": desc,
		"type":        "object",
		"required":    []any{"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"},
		"properties": map[string]any{
			"version":     str(),
			"id":          map[string]any{"type": "string", "minLength": json.Number("1")},
			"detail-type": map[string]any{"type": "string", "enum": []any{e.DetailType}},
			"source":      map[string]any{"type": "string", "enum": []any{e.Source}},
			"account":     map[string]any{"type": "string", "pattern": "^[0-9]{12}$"},
			"time":        map[string]any{"type": "string", "format": "date-time"},
			"region":      str(),
			"resources":   map[string]any{"type": "array", "items": str()},
			"detail":      t.schema,
		},
	}
	if len(t.defs) > 0 {
		doc["definitions"] = t.defs
	}
	return doc
}

// normalize deep-copies a schema through JSON so numbers are exact json.Numbers and every
// object is a map[string]any, whatever the loader produced.
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// encode renders a document (a schema or an example) with the one generated-JSON encoder.
var encode = genjson.Encode

const docURL = "mem:///event.json"

// compile checks a schema against the draft-04 metaschema, offline.
func compile(schema []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft4
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote $ref %q refused", u)
	}
	if err := c.AddResource(docURL, bytes.NewReader(schema)); err != nil {
		return nil, err
	}
	return c.Compile(docURL)
}

func validate(schema, instance []byte) error {
	sch, err := compile(schema)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(instance))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return sch.Validate(v)
}

// translated is a draft-04 detail schema plus the definitions hoisted out of it.
type translated struct {
	schema any
	defs   map[string]any
}

type translator struct {
	base        string // spec path of the detail schema, for diagnostics
	ds          *diag.Diagnostics
	keepFormats bool
	defs        map[string]any
	defKeyword  map[string]string // hoisted definition -> the keyword it was declared under
	refs        []refUse
}

// refUse is one $ref: the pointer written into the envelope and where the spec wrote it.
type refUse struct{ target, orig, at string }

// draft04Formats are the formats draft-04 defines.
var draft04Formats = map[string]bool{"date-time": true, "email": true, "hostname": true, "ipv4": true, "ipv6": true, "uri": true}

// Keywords copied as they are: draft-04 validation keywords and annotations.
var plainKeywords = map[string]bool{
	"type": true, "enum": true, "minimum": true, "maximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "minItems": true, "maxItems": true,
	"uniqueItems": true, "minProperties": true, "maxProperties": true,
	"title": true, "description": true, "default": true,
}

// Annotations newer drafts added; draft-04 has no place for them and they assert nothing.
var droppedKeywords = map[string]bool{
	"examples": true, "$comment": true, "readOnly": true, "writeOnly": true, "deprecated": true,
	"contentMediaType": true, "contentEncoding": true, "contentSchema": true,
}

// Assertions with no draft-04 equivalent.
var refusedKeywords = map[string]string{
	"if": "conditional subschemas", "then": "conditional subschemas", "else": "conditional subschemas",
	"contains": "array containment", "minContains": "array containment", "maxContains": "array containment",
	"propertyNames":         "property-name schemas",
	"unevaluatedProperties": "unevaluated-property tracking", "unevaluatedItems": "unevaluated-item tracking",
	"$anchor": "anchors", "$dynamicRef": "dynamic references", "$dynamicAnchor": "dynamic references",
	"$recursiveRef": "recursive references", "$recursiveAnchor": "recursive references", "$vocabulary": "vocabularies",
}

func (t *translator) errorf(ptr, format string, args ...any) *diag.Diagnostic {
	return t.ds.Errorf(Code, t.base+ptr, format, args...)
}

// document translates the root of a detail schema, hoisting its definitions.
func (t *translator) document(v any) translated {
	t.defs = map[string]any{}
	t.defKeyword = map[string]string{}
	if m, ok := v.(map[string]any); ok {
		for _, kw := range []string{"definitions", "$defs"} {
			defs, ok := m[kw].(map[string]any)
			if !ok {
				if _, present := m[kw]; present {
					t.errorf("/"+kw, "%s must be an object of schemas", kw)
				}
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(defs)) {
				if _, dup := t.defs[name]; dup {
					t.errorf("/"+kw+"/"+jsonptr.Escape(name), "definition %q is declared under both $defs and definitions", name)
					continue
				}
				t.defs[name] = t.schema(defs[name], "/"+kw+"/"+jsonptr.Escape(name))
				t.defKeyword[name] = kw
			}
		}
		rest := map[string]any{}
		for k, val := range m {
			switch k {
			case "definitions", "$defs", "$schema", "$id", "id":
			default:
				rest[k] = val
			}
		}
		v = rest
	}
	return translated{schema: t.schema(v, ""), defs: t.defs}
}

// schema translates one subschema at ptr (a JSON pointer inside the detail schema).
func (t *translator) schema(v any, ptr string) any {
	switch s := v.(type) {
	case bool: // draft-06+ boolean schemas
		if s {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	case map[string]any:
		return t.object(s, ptr)
	default:
		t.errorf(ptr, "a schema must be an object or a boolean, not %s", kind(v))
		return map[string]any{}
	}
}

// object translates one schema object to draft-04, keyword by keyword in sorted order (so
// diagnostics and output are deterministic).
func (t *translator) object(m map[string]any, ptr string) map[string]any {
	out := map[string]any{}
	_, tuple := m["prefixItems"]
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, at := m[k], ptr+"/"+jsonptr.Escape(k)
		switch {
		case plainKeywords[k]:
			out[k] = v
		case droppedKeywords[k]:
		case refusedKeywords[k] != "":
			d := t.errorf(at, "%q (%s) cannot be expressed in JSON Schema draft-04", k, refusedKeywords[k])
			d.Detail = "The EventBridge Schema Registry takes draft-04 only. Restate the constraint with draft-04 keywords (anyOf/oneOf/not, enum, dependencies) or drop it."
		case k == "required":
			if arr, ok := v.([]any); ok && len(arr) == 0 {
				continue // draft-04 requires at least one entry
			}
			out[k] = v
		case k == "format":
			if f, _ := v.(string); draft04Formats[f] || t.keepFormats {
				out[k] = v
			}
		case k == "const":
			out["enum"] = []any{v}
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			if b, ok := v.(bool); ok {
				out[k] = b // already the draft-04 form
			}
		case k == "$ref":
			if r, ok := t.ref(v, at); ok {
				out[k] = r
				t.refs = append(t.refs, refUse{target: r, orig: v.(string), at: at})
			}
		case k == "$defs" || k == "definitions":
			out["definitions"] = t.schemaMap(v, at)
		case k == "properties" || k == "patternProperties":
			out[k] = t.schemaMap(v, at)
		case k == "not" || k == "additionalProperties" || k == "additionalItems":
			if b, ok := v.(bool); ok && k != "not" {
				out[k] = b
			} else {
				out[k] = t.schema(v, at)
			}
		case k == "allOf" || k == "anyOf" || k == "oneOf":
			out[k] = t.schemaList(v, at)
		case k == "prefixItems":
			out["items"] = t.schemaList(v, at)
		case k == "items":
			t.items(out, v, at, tuple)
		case k == "dependencies" || k == "dependentRequired" || k == "dependentSchemas":
			t.dependencies(out, k, v, at)
		case k == "$id" || k == "id" || k == "$schema":
			t.errorf(at, "%q inside a detail schema is not supported", k)
		default:
			d := t.ds.Warnf(Code, t.base+at, "unknown JSON Schema keyword %q dropped", k)
			d.Detail = "The registry schema keeps standard draft-04 keywords only. Check the spelling, or remove it."
		}
	}
	t.constInEnum(m, out, ptr)
	t.exclusive(m, out, "exclusiveMinimum", "minimum", ptr, 1)
	t.exclusive(m, out, "exclusiveMaximum", "maximum", ptr, -1)
	return refWithSiblings(out)
}

// items translates "items": after 2020-12's prefixItems it is draft-04's additionalItems;
// a list of schemas is draft-04's tuple form.
func (t *translator) items(out map[string]any, v any, at string, tuple bool) {
	switch {
	case tuple:
		if b, ok := v.(bool); ok {
			out["additionalItems"] = b
		} else {
			out["additionalItems"] = t.schema(v, at)
		}
	case isList(v):
		out["items"] = t.schemaList(v, at)
	default:
		out["items"] = t.schema(v, at)
	}
}

// dependencies merges keyword k (draft-04's dependencies, or 2019-09's dependentRequired
// and dependentSchemas, which split it in two) into out's one "dependencies".
func (t *translator) dependencies(out map[string]any, k string, v any, at string) {
	deps, _ := out["dependencies"].(map[string]any)
	if deps == nil {
		deps = map[string]any{}
	}
	src, ok := v.(map[string]any)
	if !ok {
		t.errorf(at, "%s must be an object", k)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(src)) {
		if isList(src[name]) {
			deps[name] = src[name]
		} else {
			deps[name] = t.schema(src[name], at+"/"+jsonptr.Escape(name))
		}
	}
	out["dependencies"] = deps
}

// constInEnum keeps a const beside an enum as the one-value enum it means (the const
// keyword is no draft-04 one), and refuses a const the enum does not allow.
func (t *translator) constInEnum(m, out map[string]any, ptr string) {
	c, ok := m["const"]
	if !ok {
		return
	}
	if e, ok := m["enum"].([]any); ok {
		if !contains(e, c) {
			t.errorf(ptr+"/const", "const %v is not one of enum %v; no value can match", c, e)
		}
		out["enum"] = []any{c}
	}
}

// refWithSiblings keeps a $ref's siblings: in draft-04 a $ref replaces its whole schema, newer
// drafts apply the siblings too, so both go under an allOf.
func refWithSiblings(out map[string]any) map[string]any {
	r, ok := out["$ref"]
	if !ok || len(out) == 1 {
		return out
	}
	rest := map[string]any{}
	for k, v := range out {
		if k != "$ref" {
			rest[k] = v
		}
	}
	return map[string]any{"allOf": []any{map[string]any{"$ref": r}, rest}}
}

// exclusive turns a numeric exclusive bound (draft-06+) into minimum/maximum plus the
// draft-04 boolean, keeping whichever of the two bounds is stricter. dir is +1 for lower bounds.
func (t *translator) exclusive(in, out map[string]any, kw, bound, ptr string, dir int) {
	n, ok := in[kw].(json.Number)
	if !ok {
		if _, isBool := in[kw].(bool); !isBool && in[kw] != nil {
			t.errorf(ptr+"/"+kw, "%s must be a number", kw)
		}
		return
	}
	ex, ok := rat(n)
	if !ok {
		t.errorf(ptr+"/"+kw, "%s %s is not a number", kw, n)
		return
	}
	if b, ok := in[bound].(json.Number); ok {
		if inc, ok := rat(b); ok && inc.Cmp(ex)*dir > 0 {
			delete(out, kw) // the inclusive bound is stricter
			return
		}
	}
	out[bound] = n
	out[kw] = true
}

// ref rewrites a $ref for the envelope: root definitions live at #/definitions, the detail
// schema itself at #/properties/detail.
func (t *translator) ref(v any, at string) (string, bool) {
	r, ok := v.(string)
	if !ok {
		t.errorf(at, "$ref must be a string")
		return "", false
	}
	if !strings.HasPrefix(r, "#") {
		d := t.errorf(at, "$ref %q points outside the schema", r)
		d.Detail = "Registry schemas are standalone: move the referenced schema under $defs and use #/$defs/<name>."
		return "", false
	}
	frag := r[1:]
	if frag == "" {
		return "#/properties/detail", true
	}
	if !strings.HasPrefix(frag, "/") {
		t.errorf(at, "$ref %q uses an anchor; use a JSON pointer such as #/$defs/<name>", r)
		return "", false
	}
	segs := strings.Split(frag[1:], "/")
	for i, s := range segs {
		switch s {
		case "$defs":
			segs[i] = "definitions"
		case "prefixItems":
			segs[i] = "items"
		case "dependentSchemas":
			segs[i] = "dependencies"
		}
	}
	if segs[0] == "definitions" {
		return "#/" + strings.Join(segs, "/"), true
	}
	return "#/properties/detail/" + strings.Join(segs, "/"), true
}

// checkRefs reports every $ref whose target does not exist in the envelope document, at the
// $ref itself: draft-04 compilation would otherwise fail with the envelope's pointer only.
func (t *translator) checkRefs(doc map[string]any) {
	for _, r := range t.refs {
		if _, ok := Resolve(doc, strings.TrimPrefix(r.target, "#")); !ok {
			d := t.errorf(r.at, "$ref %q does not resolve to a schema", r.orig)
			d.Detail = "Point each $ref at a definition declared at the root of the detail schema (#/$defs/<name> or #/definitions/<name>) or at a subschema of it (#/properties/<name>); check the spelling."
		}
	}
}

// Resolve follows a JSON pointer (RFC 6901, as used in URI fragments) through a document.
func Resolve(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, seg := range strings.Split(ptr[1:], "/") {
		if u, err := url.PathUnescape(seg); err == nil {
			seg = u
		}
		seg = jsonptr.Unescape(seg)
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// locate turns a draft-04 compilation error into the spec path of the offending keyword and
// a message. Metaschema failures carry the envelope pointer of the bad value; it is mapped
// back into the detail schema (root definitions under the keyword they were declared with)
// and cut to its longest prefix that exists in the source, since a few translated paths
// (prefixItems → items, const → enum) have no literal source counterpart.
func locate(t *translator, source any, err error) (string, string) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return t.base, fmt.Sprintf("the translated schema is not valid draft-04: %v", err)
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	ptr, ok := strings.CutPrefix(ve.InstanceLocation, "/properties/detail")
	if !ok {
		if rest, isDef := strings.CutPrefix(ve.InstanceLocation, "/definitions/"); isDef {
			name, tail, _ := strings.Cut(rest, "/")
			kw := t.defKeyword[jsonptr.Unescape(name)]
			if kw == "" {
				kw = "definitions"
			}
			ptr = "/" + kw + "/" + name
			if tail != "" {
				ptr += "/" + tail
			}
		} else {
			ptr = ""
		}
	}
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	found := ""
	for i := range segs {
		cand := "/" + strings.Join(segs[:i+1], "/")
		if ptr == "" {
			break
		}
		if _, ok := Resolve(source, cand); !ok {
			break
		}
		found = cand
	}
	keyword := "the detail schema"
	if found != "" {
		keyword = strconv.Quote(segs[strings.Count(found, "/")-1])
	}
	return t.base + found, fmt.Sprintf("%s is not valid draft-04: %s", keyword, ve.Message)
}

func (t *translator) schemaMap(v any, at string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		t.errorf(at, "must be an object of schemas, not %s", kind(v))
		return map[string]any{}
	}
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = t.schema(m[k], at+"/"+jsonptr.Escape(k))
	}
	return out
}

func (t *translator) schemaList(v any, at string) []any {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		t.errorf(at, "must be a non-empty array of schemas")
		return []any{map[string]any{}}
	}
	out := make([]any, len(arr))
	for i, s := range arr {
		out[i] = t.schema(s, fmt.Sprintf("%s/%d", at, i))
	}
	return out
}

func rat(n json.Number) (*big.Rat, bool) {
	return new(big.Rat).SetString(n.String())
}

func isList(v any) bool { _, ok := v.([]any); return ok }

func contains(list []any, v any) bool {
	vb, _ := json.Marshal(v)
	for _, e := range list {
		if eb, _ := json.Marshal(e); bytes.Equal(eb, vb) {
			return true
		}
	}
	return false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64, int:
		return "a number"
	case []any:
		return "an array"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Validate checks an event envelope against a schema Generate wrote (draft-04, offline);
// a *jsonschema.ValidationError lists every violation with its JSON pointer.
func Validate(schema, event []byte) error { return validate(schema, event) }
