// Package compat decides whether a change to a fleet's event contracts breaks the classes and
// workflows that consume them. `fleetc schemas check`, `fleetc schemas publish` and `fleetc diff`
// share it, so a change is judged by one set of rules whichever command reports it.
//
// A contract is compared as the registry stores it: the generated draft-04 schema of the whole
// EventBridge envelope. Two directions matter (../shared/design/compatibility.md):
//   - forward: consumers still running the old contract read events written under the new one
//     (a producer deployed first). It breaks when the new schema admits an event the old
//     refuses: a required property removed, a type, enum, bound, pattern or format widened or
//     removed, an object reopened.
//   - backward: consumers on the new contract read events written under the old one (messages
//     queued or dead-lettered at deploy time, redrives, archive replays). It breaks when the new
//     schema refuses an event the old admits: new required properties, narrowed enums, types
//     and bounds, added patterns and formats, a closed content model.
//
// KindTable lists every kind with its direction and purpose. A breaking change whose contract
// `version` was not bumped is an error; with a bump it is a warning (consumers that do not
// handle both versions still break). A change that needs care (an optional property removed)
// is a warning; safe changes (an optional property added, a description) are info.
package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// Contract is one event contract on one side of a comparison.
type Contract struct {
	Name       string         // registry schema name, <source>@<detail-type>
	DetailType string         // EventBridge detail-type
	Source     string         // EventBridge source
	Version    int            // the spec's contract version; 0 when unknown
	Schema     map[string]any // the draft-04 schema document (numbers as json.Number)
	Content    []byte         // the document's bytes as generated or stored
	Consumers  []string       // classes consuming the event, sorted
	Workflows  []string       // workflows dispatching to a consuming class, sorted
	Path       string         // spec path of the event; "" when the contract came from elsewhere
}

// FromFleet returns the fleet's contracts with their generated schemas, read through the
// schema generator so they are byte for byte what `fleetc build` writes and `publish` sends.
// Events whose schema cannot be generated are left out; the diagnostics say why.
func FromFleet(f *ir.Fleet) ([]Contract, diag.Diagnostics) {
	files, ds := eventschema.Generate(f)
	content := map[string][]byte{}
	for _, file := range files {
		content[file.Path] = file.Bytes
	}
	out, cds := FromGenerated(f, func(path string) ([]byte, bool) {
		b, ok := content[path]
		return b, ok
	})
	return out, append(ds, cds...)
}

// FromGenerated returns the fleet's contracts from schema files already generated (get reads
// one by output path, as artifact.Set.Get does): the compiler builds them once, with the
// other files, and every reader takes them from there.
func FromGenerated(f *ir.Fleet, get func(path string) ([]byte, bool)) ([]Contract, diag.Diagnostics) {
	var out []Contract
	var ds diag.Diagnostics
	for _, e := range f.Events {
		b, ok := get(eventschema.SchemaPath(e))
		if !ok {
			continue
		}
		doc, err := decode(b)
		if err != nil {
			ds.Errorf(eventschema.Code, e.Path, "event %s: generated schema is not JSON: %v", e.DetailType, err)
			continue
		}
		c := Contract{Name: e.SchemaName, DetailType: e.DetailType, Source: e.Source, Version: e.Version,
			Schema: doc, Content: b, Path: e.Path}
		workflows := map[string]bool{}
		for _, a := range e.Consumers {
			c.Consumers = append(c.Consumers, a.Name)
			for _, w := range a.Workflows {
				workflows[w.Name] = true
			}
		}
		slices.Sort(c.Consumers)
		c.Workflows = slices.Sorted(maps.Keys(workflows))
		out = append(out, c)
	}
	return out, ds
}

// Parse reads a contract from a stored schema document (the registry's content, or a
// generated schemas/*.json file). Detail-type and source come from the envelope's enums.
func Parse(name string, content []byte) (Contract, error) {
	doc, err := decode(content)
	if err != nil {
		return Contract{}, fmt.Errorf("schema %s: %w", name, err)
	}
	c := Contract{Name: name, Schema: doc, Content: content}
	c.DetailType = envelopeConst(doc, "detail-type")
	c.Source = envelopeConst(doc, "source")
	if c.DetailType == "" {
		if dt, ok := strings.CutPrefix(name, c.Source+"@"); ok && c.Source != "" {
			c.DetailType = dt
		} else {
			c.DetailType = name
		}
	}
	return c, nil
}

func envelopeConst(doc map[string]any, prop string) string {
	p, _ := dig(doc, "properties", prop).(map[string]any)
	if e, ok := p["enum"].([]any); ok && len(e) == 1 {
		s, _ := e[0].(string)
		return s
	}
	return ""
}

// Equal reports whether two schema documents are the same JSON, whatever their formatting.
func Equal(a, b []byte) bool {
	da, errA := decode(a)
	db, errB := decode(b)
	return errA == nil && errB == nil && canon(da) == canon(db)
}

func decode(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return doc, nil
}

// canon is a value's canonical JSON: encoding/json sorts map keys.
func canon(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Kind names one kind of contract change.
type Kind string

// Direction is who a breaking change breaks.
type Direction string

const (
	Forward  Direction = "forward"  // old consumers reading new events: the new schema admits an event the old refuses
	Backward Direction = "backward" // new consumers reading old events (queued, dead-lettered, replayed): the old admits one the new refuses
	Both     Direction = "both"
)

// Effect is how a kind weighs in a review: it breaks (error, or warning once the contract
// version is bumped), needs care (warning), or is safe (info).
type Effect string

const (
	Breaks Effect = "breaks"
	Care   Effect = "care"
	Safe   Effect = "safe"
)

// KindSpec is one row of the kinds table: what a kind breaks and why it exists.
type KindSpec struct {
	Kind      Kind
	Effect    Effect
	Direction Direction // "" for safe kinds
	Purpose   string
}

// Kinds of contract change. Directions follow ../shared/design/compatibility.md: a change that
// lets the new schema admit events the old refuses (widening) breaks forward, one that makes
// it refuse events the old admits (narrowing) breaks backward, and a change whose effect
// cannot be proven (a different pattern or format) counts as both.
const (
	EventRemoved            Kind = "event-removed"
	EventAdded              Kind = "event-added"
	DetailTypeChanged       Kind = "detail-type-changed"
	SourceChanged           Kind = "source-changed"
	PropertyRemoved         Kind = "property-removed"
	OptionalPropertyRemoved Kind = "optional-property-removed"
	PropertyRenamed         Kind = "property-renamed"
	PropertyAdded           Kind = "property-added"
	ClosedAdded             Kind = "property-added-to-closed-object"
	TypeWidened             Kind = "type-widened"
	TypeNarrowed            Kind = "type-narrowed"
	TypeChanged             Kind = "type-changed"
	RequiredAdded           Kind = "required-added"
	RequiredRemoved         Kind = "required-removed"
	EnumNarrowed            Kind = "enum-narrowed"
	EnumWidened             Kind = "enum-widened"
	BoundTightened          Kind = "bound-tightened"
	BoundLoosened           Kind = "bound-loosened"
	PatternAdded            Kind = "pattern-added"
	PatternRemoved          Kind = "pattern-removed"
	PatternChanged          Kind = "pattern-changed"
	FormatAdded             Kind = "format-added"
	FormatRemoved           Kind = "format-removed"
	FormatChanged           Kind = "format-changed"
	Closed                  Kind = "additional-properties-closed"
	Opened                  Kind = "additional-properties-opened"
	ConstraintChanged       Kind = "constraint-changed" // a keyword fleetc cannot reason about (anyOf, not, dependencies, ...)
	AnnotationChanged       Kind = "annotation-changed"
)

// KindTable is every kind, in report order. compat_test holds a firing and a non-firing case
// for each row.
var KindTable = []KindSpec{
	{EventRemoved, Breaks, Forward, "consumers and rules outside the spec, and archived events, still carry the event"},
	{EventAdded, Safe, "", "a new contract; nothing read it before"},
	{DetailTypeChanged, Breaks, Both, "rules and consumers matching the old detail-type stop receiving the event"},
	{SourceChanged, Breaks, Both, "rules and consumers matching the old source stop receiving the event"},
	{PropertyRemoved, Breaks, Forward, "a required property is gone: new events may lack what old consumers require"},
	{OptionalPropertyRemoved, Care, Forward, "the old contract allowed its absence, but new events may carry it with any value"},
	{PropertyRenamed, Breaks, Both, "the same schema under a new name: old consumers miss it, new ones miss it in old events"},
	{PropertyAdded, Safe, "", "an optional property in an open object: valid for old and new consumers"},
	{ClosedAdded, Breaks, Forward, "a property old consumers refuse (additionalProperties false or a schema it does not fit)"},
	{TypeWidened, Breaks, Forward, "the new type admits values the old refuses (integer to number, a type added or removed)"},
	{TypeNarrowed, Breaks, Backward, "the new type refuses values the old admits (number to integer, a type dropped)"},
	{TypeChanged, Breaks, Both, "old and new types each admit values the other refuses"},
	{RequiredAdded, Breaks, Backward, "events written before do not carry the newly required property"},
	{RequiredRemoved, Breaks, Forward, "new events may omit a property old consumers require"},
	{EnumNarrowed, Breaks, Backward, "old events may carry a value the new enum refuses (an enum added counts)"},
	{EnumWidened, Breaks, Forward, "new events may carry a value old consumers refuse (an enum removed counts)"},
	{BoundTightened, Breaks, Backward, "old events may fall outside the new bound (a bound added counts)"},
	{BoundLoosened, Breaks, Forward, "new events may fall outside the old bound (a bound removed counts)"},
	{PatternAdded, Breaks, Backward, "old events may not match the new pattern"},
	{PatternRemoved, Breaks, Forward, "new events may not match the pattern old consumers check"},
	{PatternChanged, Breaks, Both, "regex containment is not provable: counted as narrowing and widening"},
	{FormatAdded, Breaks, Backward, "old events may not have the new format"},
	{FormatRemoved, Breaks, Forward, "new events may not have the format old consumers check"},
	{FormatChanged, Breaks, Both, "one format for another (email to uri): each admits values the other refuses"},
	{Closed, Breaks, Backward, "additionalProperties: false (or a schema) added: old events carrying other properties may be refused"},
	{Opened, Breaks, Forward, "a closed object (or one whose extra properties had a schema) opened: new events may carry properties old consumers refuse"},
	{ConstraintChanged, Breaks, Both, "anyOf, oneOf, allOf of another length, not, dependencies, patternProperties: not provable"},
	{AnnotationChanged, Safe, "", "title, description, default or examples changed: no event changes validity, but publish writes a new version"},
}

// Spec returns a kind's row of KindTable.
func Spec(k Kind) KindSpec {
	for _, s := range KindTable {
		if s.Kind == k {
			return s
		}
	}
	return KindSpec{Kind: k, Effect: Breaks, Direction: Both, Purpose: "unknown kind"}
}

// Side is one of the two versions a comparison reads: where a finding's spec path lives.
type Side string

// The sides: a removed thing lives in the base, an added or changed one in the head.
const (
	Base Side = "base"
	Head Side = "head"
)

// Finding is one contract change.
type Finding struct {
	Kind        Kind          `json:"kind"`
	Breaking    bool          `json:"breaking"`
	Direction   Direction     `json:"direction,omitempty"`
	Severity    diag.Severity `json:"severity"`       // error: breaking, version not bumped; warning: breaking, bumped; info: safe
	Code        string        `json:"code,omitempty"` // C001 or C002 when breaking (Codes)
	Event       string        `json:"event"`          // detail-type (the head's; the base's when removed)
	Schema      string        `json:"schema"`         // registry schema name
	Pointer     string        `json:"pointer"`
	Side        Side          `json:"side"`           // where Path lives
	Path        string        `json:"path,omitempty"` // spec path of the event on Side
	Summary     string        `json:"summary"`
	Consumers   []string      `json:"consumers"`
	Workflows   []string      `json:"workflows"`
	BaseVersion int           `json:"base_version"`
	HeadVersion int           `json:"head_version"`
	Bumped      bool          `json:"version_bumped"`
}

// Report is the outcome of a comparison, findings sorted by event, pointer and kind.
type Report struct {
	Findings []Finding `json:"findings"`
}

// Breaking returns the breaking findings.
func (r Report) Breaking() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Breaking {
			out = append(out, f)
		}
	}
	return out
}

// Errors counts breaking findings without a version bump.
func (r Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == diag.Error {
			n++
		}
	}
	return n
}

// Diagnostic codes, for commands that report findings as diagnostics.
const (
	CodeUnversioned = "C001"
	CodeVersioned   = "C002"
)

// Codes documents the codes Diagnostics emits.
func Codes() []diag.Code {
	return []diag.Code{
		{ID: CodeUnversioned, Severity: diag.Error, Summary: "breaking event contract change without a version bump",
			Explain: "A change to an event's schema breaks a consumer. When the new schema admits events the old one refuses (a required property removed, a type, enum, bound, pattern or format widened or removed, an object reopened), classes still running the old contract reject what the producer now writes (forward). " +
				"When it refuses events the old one admits (new required properties, narrowed enums and bounds, added patterns or formats, additionalProperties: false), new consumers reject the events queued, dead-lettered or archived under the old one (backward). A changed pattern or format counts as both. " +
				"Make the change additive (a new optional property), or bump the event's version and deploy consumers that handle both versions first."},
		{ID: CodeVersioned, Severity: diag.Warning, Summary: "breaking event contract change (version bumped)",
			Explain: "The event's version was bumped, so the break is declared; consumers that do not handle both versions still break, and old events (queues, DLQs, the archive) still carry the old version."},
	}
}

// pointerOrRoot names a schema location for messages: "/properties/detail/properties/a/items"
// reads "detail.a[]".
func pointerOrRoot(p string) string {
	if p == "" {
		return "the event"
	}
	var b strings.Builder
	segs := strings.Split(p[1:], "/")
	for i := 0; i < len(segs); i++ {
		seg := jsonptr.Unescape(segs[i])
		switch {
		case (seg == "properties" || seg == "definitions") && i+1 < len(segs) && (i == 0 || segs[i-1] != "properties"):
			if seg == "definitions" {
				b.WriteString("definitions")
			}
			continue
		case seg == "items" && (i == 0 || segs[i-1] != "properties"):
			b.WriteString("[]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// Compare judges every change from the base contracts to the head contracts. Contracts are
// matched by detail-type; an unmatched pair with the same source and the same detail schema
// (or the same consumers) is a changed detail-type rather than a removal plus an addition.
func Compare(base, head []Contract) Report {
	heads := map[string]*Contract{}
	for i := range head {
		heads[head[i].DetailType] = &head[i]
	}
	matched := map[string]bool{}
	var removed []*Contract
	var r Report
	for i := range base {
		b := &base[i]
		if h, ok := heads[b.DetailType]; ok {
			matched[h.DetailType] = true
			r.pair(b, h)
			continue
		}
		removed = append(removed, b)
	}
	var added []*Contract
	for i := range head {
		if !matched[head[i].DetailType] {
			added = append(added, &head[i])
		}
	}
	for _, b := range removed {
		if h := renamedTo(b, added); h != nil {
			added = slices.DeleteFunc(added, func(c *Contract) bool { return c == h })
			r.pair(b, h)
			continue
		}
		r.add(b, b, Finding{Kind: EventRemoved, Side: Base, Path: b.Path,
			Summary: "event removed; consumers outside this spec and archived events still carry it"})
	}
	for _, h := range added {
		r.add(h, h, Finding{Kind: EventAdded, Side: Head, Path: h.Path, Summary: "new event"})
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return strings.Compare(a.Event+"\x00"+a.Pointer+"\x00"+string(a.Kind), b.Event+"\x00"+b.Pointer+"\x00"+string(b.Kind))
	})
	return r
}

func renamedTo(b *Contract, added []*Contract) *Contract {
	for _, h := range added {
		if h.Source == b.Source && canon(dig(h.Schema, "properties", "detail")) == canon(dig(b.Schema, "properties", "detail")) {
			return h
		}
	}
	for _, h := range added {
		if len(b.Consumers) > 0 && slices.Equal(h.Consumers, b.Consumers) {
			return h
		}
	}
	return nil
}

// pair compares one contract across the two sides.
func (r *Report) pair(b, h *Contract) {
	if b.DetailType != h.DetailType {
		r.add(b, h, Finding{Kind: DetailTypeChanged, Pointer: "/properties/detail-type",
			Summary: fmt.Sprintf("detail-type changed from %q to %q: rules and consumers matching the old name stop receiving it", b.DetailType, h.DetailType)})
	}
	if b.Source != h.Source {
		r.add(b, h, Finding{Kind: SourceChanged, Pointer: "/properties/source",
			Summary: fmt.Sprintf("source changed from %q to %q: rules and consumers matching the old source stop receiving it", b.Source, h.Source)})
	}
	w := &walker{base: b.Schema, head: h.Schema, seen: map[string]bool{}}
	w.schema(b.Schema, h.Schema, "")
	for _, f := range w.out {
		f.Side = Head
		if f.Kind == PropertyRemoved || f.Kind == OptionalPropertyRemoved || f.Kind == PropertyRenamed {
			f.Side = Base
		}
		r.add(b, h, f)
	}
}

// add completes a finding with the contract's identity, consumers and versions.
func (r *Report) add(b, h *Contract, f Finding) {
	f.Event, f.Schema = h.DetailType, h.Name
	if f.Side == "" {
		f.Side = Head
	}
	switch {
	case f.Path != "":
	case f.Side == Base:
		f.Path = specPath(b.Path, f.Pointer)
	default:
		f.Path = specPath(h.Path, f.Pointer)
	}
	if f.Kind == EventRemoved {
		f.Event, f.Schema = b.DetailType, b.Name
	}
	f.Consumers = union(b.Consumers, h.Consumers)
	f.Workflows = union(b.Workflows, h.Workflows)
	f.BaseVersion, f.HeadVersion = b.Version, h.Version
	f.Bumped = b.Version > 0 && h.Version > b.Version
	spec := Spec(f.Kind)
	f.Breaking, f.Direction = spec.Effect == Breaks, spec.Direction
	switch {
	case spec.Effect == Safe:
		f.Severity = diag.Info
	case spec.Effect == Care:
		f.Severity = diag.Warning
	case f.Bumped:
		f.Severity, f.Code = diag.Warning, CodeVersioned
	default:
		f.Severity, f.Code = diag.Error, CodeUnversioned
	}
	r.Findings = append(r.Findings, f)
}

// specPath maps a pointer inside the envelope's detail schema to the spec path of the event's
// detail ("/events/x" + "/detail/properties/y"); anything else stays at the event.
func specPath(event, ptr string) string {
	if event == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(ptr, "/properties/detail"); ok && (rest == "" || rest[0] == '/') {
		return event + "/detail" + rest
	}
	return event
}

func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// walker compares two schema documents subschema by subschema. Pointers are the head's.
type walker struct {
	base, head map[string]any
	seen       map[string]bool // $ref pairs already compared (recursive schemas)
	out        []Finding
}

// emit records a finding; its effect and direction come from KindTable when it is added.
func (w *walker) emit(kind Kind, ptr, format string, args ...any) {
	w.out = append(w.out, Finding{Kind: kind, Pointer: ptr, Summary: fmt.Sprintf(format, args...)})
}

// deref follows $ref (within the document) until a schema without one, or a ref it already
// followed (a cycle). A chain of aliases is followed to its end however long: a change at its
// end is a change of every schema on the way. key lists the refs followed.
func deref(doc map[string]any, s map[string]any) (map[string]any, string) {
	var key strings.Builder
	followed := map[string]bool{} // a set: a chain is as long as the document allows
	for {
		ref, ok := s["$ref"].(string)
		if !ok || followed[ref] {
			break
		}
		followed[ref] = true
		key.WriteString(ref + " ")
		t, ok := eventschema.Resolve(doc, strings.TrimPrefix(ref, "#"))
		m, isMap := t.(map[string]any)
		if !ok || !isMap {
			break
		}
		s = m
	}
	return s, key.String()
}

func asSchema(v any) map[string]any {
	switch s := v.(type) {
	case map[string]any:
		return s
	case bool:
		if !s {
			return map[string]any{"not": map[string]any{}}
		}
	}
	return map[string]any{}
}

// schema compares one subschema; ptr is its pointer in the head document.
func (w *walker) schema(b, h map[string]any, ptr string) {
	b, bref := deref(w.base, b)
	h, href := deref(w.head, h)
	if bref != "" || href != "" {
		key := bref + "|" + href
		if w.seen[key] {
			return
		}
		w.seen[key] = true
	}
	if canon(b) == canon(h) {
		return
	}
	if !w.types(b, h, ptr) {
		return // disjoint types: deeper differences are noise
	}
	if ptr != "/properties/detail-type" && ptr != "/properties/source" {
		w.enum(b, h, ptr)
	}
	w.bounds(b, h, ptr)
	w.stringRule(b, h, ptr, "pattern", PatternAdded, PatternRemoved, PatternChanged)
	w.stringRule(b, h, ptr, "format", FormatAdded, FormatRemoved, FormatChanged)
	w.annotations(b, h, ptr)
	w.required(b, h, ptr)
	w.properties(b, h, ptr)
	w.additional(b, h, ptr)
	w.items(b, h, ptr)
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		bl, _ := b[kw].([]any)
		hl, _ := h[kw].([]any)
		if len(bl) == len(hl) {
			for i := range bl {
				w.schema(asSchema(bl[i]), asSchema(hl[i]), fmt.Sprintf("%s/%s/%d", ptr, kw, i))
			}
			continue
		}
		w.opaque(kw, b, h, ptr)
	}
	for _, kw := range []string{"not", "dependencies", "patternProperties", "additionalItems"} {
		w.opaque(kw, b, h, ptr)
	}
}

// opaque reports a changed keyword whose effect fleetc does not derive, as breaking both ways.
func (w *walker) opaque(kw string, b, h map[string]any, ptr string) {
	if canon(b[kw]) != canon(h[kw]) {
		w.emit(ConstraintChanged, ptr+"/"+kw, "%s changed at %s; fleetc cannot prove it compatible", kw, pointerOrRoot(ptr))
	}
}

func typeSet(s map[string]any) []string {
	var out []string
	switch t := s["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, v := range t {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
	}
	slices.Sort(out)
	return out
}

// accepts reports whether a value of type t is valid under type set set ("integer" ⊂ "number").
func accepts(set []string, t string) bool {
	return len(set) == 0 || slices.Contains(set, t) || t == "integer" && slices.Contains(set, "number")
}

// types reports a type change and returns false when the two sides share no type.
func (w *walker) types(b, h map[string]any, ptr string) bool {
	bt, ht := typeSet(b), typeSet(h)
	if slices.Equal(bt, ht) {
		return true
	}
	widened, narrowed := false, false // new accepts values old rejects / old accepts values new rejects
	for _, t := range ht {
		widened = widened || !accepts(bt, t)
	}
	for _, t := range bt {
		narrowed = narrowed || !accepts(ht, t)
	}
	if len(ht) == 0 {
		widened = true
	}
	if len(bt) == 0 {
		narrowed = true
	}
	kind := TypeChanged
	switch {
	case widened && !narrowed:
		kind = TypeWidened
	case narrowed && !widened:
		kind = TypeNarrowed
	}
	w.emit(kind, ptr+"/type", "type of %s changed from %s to %s", pointerOrRoot(ptr), typeName(bt), typeName(ht))
	for _, t := range ht {
		if accepts(bt, t) {
			return true
		}
	}
	return len(bt) == 0 || len(ht) == 0
}

func typeName(ts []string) string {
	if len(ts) == 0 {
		return "any"
	}
	return strings.Join(ts, "|")
}

func (w *walker) enum(b, h map[string]any, ptr string) {
	be, bok := b["enum"].([]any)
	he, hok := h["enum"].([]any)
	if !bok && !hok {
		return
	}
	set := func(l []any) map[string]bool {
		m := map[string]bool{}
		for _, v := range l {
			m[canon(v)] = true
		}
		return m
	}
	bs, hs := set(be), set(he)
	var gone, added []string
	for _, v := range slices.Sorted(maps.Keys(bs)) {
		if !hs[v] {
			gone = append(gone, v)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(hs)) {
		if !bs[v] {
			added = append(added, v)
		}
	}
	switch {
	case !bok:
		w.emit(EnumNarrowed, ptr+"/enum", "%s restricted to enum %s", pointerOrRoot(ptr), strings.Join(added, ", "))
	case !hok:
		w.emit(EnumWidened, ptr+"/enum", "enum of %s removed", pointerOrRoot(ptr))
	default:
		if len(gone) > 0 {
			w.emit(EnumNarrowed, ptr+"/enum", "enum of %s no longer allows %s", pointerOrRoot(ptr), strings.Join(gone, ", "))
		}
		if len(added) > 0 {
			w.emit(EnumWidened, ptr+"/enum", "enum of %s now also allows %s", pointerOrRoot(ptr), strings.Join(added, ", "))
		}
	}
}

// boundKeywords are the numeric bounds; raising a lower bound tightens it, raising an upper
// bound loosens it.
var boundKeywords = []struct {
	kw    string
	lower bool
}{
	{"minimum", true}, {"maximum", false}, {"minLength", true}, {"maxLength", false},
	{"minItems", true}, {"maxItems", false}, {"minProperties", true}, {"maxProperties", false},
}

func num(v any) (*big.Rat, bool) {
	switch n := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(n.String())
	case float64:
		return new(big.Rat).SetFloat64(n), true
	}
	return nil, false
}

func (w *walker) bounds(b, h map[string]any, ptr string) {
	tight := func(kw, format string, args ...any) {
		w.emit(BoundTightened, ptr+"/"+kw, format, args...)
	}
	loose := func(kw, format string, args ...any) {
		w.emit(BoundLoosened, ptr+"/"+kw, format, args...)
	}
	for _, k := range boundKeywords {
		bv, bok := num(b[k.kw])
		hv, hok := num(h[k.kw])
		switch {
		case !bok && hok:
			tight(k.kw, "%s of %s set to %s", k.kw, pointerOrRoot(ptr), hv.RatString())
		case bok && !hok:
			loose(k.kw, "%s of %s removed (was %s)", k.kw, pointerOrRoot(ptr), bv.RatString())
		case bok && hok && bv.Cmp(hv) != 0:
			if raised := hv.Cmp(bv) > 0; raised == k.lower {
				tight(k.kw, "%s of %s tightened from %s to %s", k.kw, pointerOrRoot(ptr), bv.RatString(), hv.RatString())
			} else {
				loose(k.kw, "%s of %s loosened from %s to %s", k.kw, pointerOrRoot(ptr), bv.RatString(), hv.RatString())
			}
		}
	}
	for _, kw := range []string{"exclusiveMinimum", "exclusiveMaximum", "uniqueItems"} {
		bb, _ := b[kw].(bool)
		hb, _ := h[kw].(bool)
		switch {
		case !bb && hb:
			tight(kw, "%s of %s turned on", kw, pointerOrRoot(ptr))
		case bb && !hb:
			loose(kw, "%s of %s turned off", kw, pointerOrRoot(ptr))
		}
	}
	bm, bok := num(b["multipleOf"])
	hm, hok := num(h["multipleOf"])
	switch {
	case hok && !bok:
		tight("multipleOf", "multipleOf of %s set to %s", pointerOrRoot(ptr), hm.RatString())
	case bok && !hok:
		loose("multipleOf", "multipleOf of %s removed (was %s)", pointerOrRoot(ptr), bm.RatString())
	case bok && hok && bm.Cmp(hm) != 0:
		// Every multiple of the new value is a multiple of the old when new/old is an integer
		// (narrowing); the reverse widens; anything else does both.
		from, to := bm.RatString(), hm.RatString()
		narrows, widens := false, false
		if bm.Sign() != 0 && hm.Sign() != 0 { // 0 is not a valid multipleOf: count it both ways
			narrows, widens = new(big.Rat).Quo(hm, bm).IsInt(), new(big.Rat).Quo(bm, hm).IsInt()
		}
		if !widens {
			tight("multipleOf", "multipleOf of %s changed from %s to %s", pointerOrRoot(ptr), from, to)
		}
		if !narrows {
			loose("multipleOf", "multipleOf of %s changed from %s to %s", pointerOrRoot(ptr), from, to)
		}
	}
}

// stringRule compares pattern or format. fleetc cannot prove one regex or format contains
// another, so a changed value counts as both narrowing and widening.
func (w *walker) stringRule(b, h map[string]any, ptr, kw string, added, removed, changed Kind) {
	bv, bok := b[kw].(string)
	hv, hok := h[kw].(string)
	switch {
	case hok && !bok:
		w.emit(added, ptr+"/"+kw, "%s of %s set to %q", kw, pointerOrRoot(ptr), hv)
	case bok && !hok:
		w.emit(removed, ptr+"/"+kw, "%s of %s removed (was %q)", kw, pointerOrRoot(ptr), bv)
	case bok && hok && bv != hv:
		w.emit(changed, ptr+"/"+kw, "%s of %s changed from %q to %q", kw, pointerOrRoot(ptr), bv, hv)
	}
}

// annotationKeywords change no event's validity; a registry still stores a new version.
var annotationKeywords = []string{"title", "description", "default", "examples", "$comment"}

func (w *walker) annotations(b, h map[string]any, ptr string) {
	for _, kw := range annotationKeywords {
		bv, hv := b[kw], h[kw]
		if ptr == "" { // the envelope: its title is the detail-type, its description ends with the version
			if kw == "title" || envelopeConst(b, "detail-type") != envelopeConst(h, "detail-type") || envelopeConst(b, "source") != envelopeConst(h, "source") {
				continue // the default description names both; their own findings say more
			}
			bs, _ := bv.(string)
			hs, _ := hv.(string)
			bv, hv = eventschema.DescriptionWithoutVersion(bs), eventschema.DescriptionWithoutVersion(hs)
		}
		if canon(bv) != canon(hv) {
			w.emit(AnnotationChanged, ptr+"/"+kw, "%s of %s changed; publish writes a new schema version", kw, pointerOrRoot(ptr))
		}
	}
}

func stringSet(v any) map[string]bool {
	m := map[string]bool{}
	l, _ := v.([]any)
	for _, e := range l {
		if s, ok := e.(string); ok {
			m[s] = true
		}
	}
	return m
}

func (w *walker) required(b, h map[string]any, ptr string) {
	br, hr := stringSet(b["required"]), stringSet(h["required"])
	renamed := w.renames(b, h)
	for _, p := range slices.Sorted(maps.Keys(hr)) {
		if !br[p] && !(renamed[p] != "" && br[renamed[p]]) {
			w.emit(RequiredAdded, ptr+"/properties/"+jsonptr.Escape(p), "property %q of %s is now required; events written before do not carry it", p, pointerOrRoot(ptr))
		}
	}
	hprops, _ := h["properties"].(map[string]any)
	for _, p := range slices.Sorted(maps.Keys(br)) {
		if hr[p] {
			continue
		}
		if _, kept := hprops[p]; kept { // removals are reported as such
			w.emit(RequiredRemoved, ptr+"/properties/"+jsonptr.Escape(p), "property %q of %s is no longer required; consumers that rely on it get events without it", p, pointerOrRoot(ptr))
		}
	}
}

// renames maps each added property of h to the removed property of b it renames: same
// schema, same object.
func (w *walker) renames(b, h map[string]any) map[string]string {
	bp, _ := b["properties"].(map[string]any)
	hp, _ := h["properties"].(map[string]any)
	out := map[string]string{}
	taken := map[string]bool{}
	for _, n := range slices.Sorted(maps.Keys(hp)) {
		if _, old := bp[n]; old {
			continue
		}
		for _, o := range slices.Sorted(maps.Keys(bp)) {
			if _, still := hp[o]; still || taken[o] {
				continue
			}
			if canon(bp[o]) == canon(hp[n]) {
				out[n], taken[o] = o, true
				break
			}
		}
	}
	return out
}

func (w *walker) properties(b, h map[string]any, ptr string) {
	bp, _ := b["properties"].(map[string]any)
	hp, _ := h["properties"].(map[string]any)
	renamed := w.renames(b, h)
	from := map[string]string{}
	for n, o := range renamed {
		from[o] = n
	}
	hr, br := stringSet(h["required"]), stringSet(b["required"])
	for _, p := range slices.Sorted(maps.Keys(bp)) {
		at := ptr + "/properties/" + jsonptr.Escape(p)
		if hs, ok := hp[p]; ok {
			w.schema(asSchema(bp[p]), asSchema(hs), at)
			continue
		}
		if n := from[p]; n != "" {
			w.emit(PropertyRenamed, at, "property %q of %s renamed to %q; consumers reading %q no longer find it", p, pointerOrRoot(ptr), n, p)
			continue
		}
		if br[p] {
			w.emit(PropertyRemoved, at, "required property %q of %s removed; consumers reading it no longer find it", p, pointerOrRoot(ptr))
		} else {
			w.emit(OptionalPropertyRemoved, at, "optional property %q of %s removed; new events may carry it unchecked", p, pointerOrRoot(ptr))
		}
	}
	bAdd, bOpen := b["additionalProperties"]
	for _, p := range slices.Sorted(maps.Keys(hp)) {
		if _, ok := bp[p]; ok || renamed[p] != "" {
			continue
		}
		at := ptr + "/properties/" + jsonptr.Escape(p)
		switch {
		case bOpen && bAdd == false:
			w.emit(ClosedAdded, at, "property %q added to %s, which old consumers read with additionalProperties: false", p, pointerOrRoot(ptr))
		case bOpen && bAdd != true && canon(bAdd) != canon(hp[p]):
			w.emit(ClosedAdded, at, "property %q added to %s; old consumers validate it against the base additionalProperties schema", p, pointerOrRoot(ptr))
		case !hr[p]:
			w.emit(PropertyAdded, at, "optional property %q added to %s", p, pointerOrRoot(ptr))
		}
	}
}

func (w *walker) additional(b, h map[string]any, ptr string) {
	bv, bok := b["additionalProperties"]
	hv, hok := h["additionalProperties"]
	open := func(ok bool, v any) bool { return !ok || v == true }
	_, bIsMap := bv.(map[string]any)
	_, hIsMap := hv.(map[string]any)
	at := ptr + "/additionalProperties"
	switch {
	case hok && hv == false && !(bok && bv == false):
		w.emit(Closed, at, "%s now has additionalProperties: false; events carrying other properties are refused", pointerOrRoot(ptr))
	case bok && bv == false && !(hok && hv == false):
		w.emit(Opened, at, "%s now accepts additional properties", pointerOrRoot(ptr))
	case bIsMap && hIsMap:
		w.schema(bv.(map[string]any), hv.(map[string]any), at)
	case open(bok, bv) && hIsMap:
		w.emit(Closed, at, "additionalProperties of %s now constrained by a schema", pointerOrRoot(ptr))
	case bIsMap && open(hok, hv):
		w.emit(Opened, at, "additionalProperties of %s no longer constrained by a schema", pointerOrRoot(ptr))
	}
}

func (w *walker) items(b, h map[string]any, ptr string) {
	bi, hi := b["items"], h["items"]
	if bi == nil && hi == nil {
		return
	}
	bl, bList := bi.([]any)
	hl, hList := hi.([]any)
	switch {
	case bList && hList && len(bl) == len(hl):
		for i := range bl {
			w.schema(asSchema(bl[i]), asSchema(hl[i]), fmt.Sprintf("%s/items/%d", ptr, i))
		}
	case !bList && !hList:
		w.schema(asSchema(bi), asSchema(hi), ptr+"/items")
	default:
		w.opaque("items", b, h, ptr)
	}
}
