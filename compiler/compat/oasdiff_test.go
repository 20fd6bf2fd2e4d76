package compat_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// mutation is one single-keyword change to a property's schema.
type mutation struct {
	name       string
	base, head string  // the property's schema, JSON
	required   [2]bool // p required on the base, on the head
	closed     [2]bool // additionalProperties false on the base, on the head
	// exception says why oasdiff's HTTP rules do not apply to this pair, "" when they do.
	exception string
}

// mutations are the single-mutation pairs of the differential test: every bound keyword
// raised, lowered, added and removed; enums widened and narrowed; pattern and format added,
// removed and changed; types; required; property removal; additionalProperties.
func mutations() []mutation {
	var ms []mutation
	bounds := []struct{ kw, typ, low, high string }{
		{"minimum", "number", "1", "5"}, {"maximum", "number", "1", "5"},
		{"minLength", "string", "1", "5"}, {"maxLength", "string", "1", "5"},
		{"minItems", "array", "1", "5"}, {"maxItems", "array", "1", "5"},
	}
	for _, b := range bounds {
		items := ""
		if b.typ == "array" {
			items = `,"items":{"type":"string"}`
		}
		with := func(v string) string { return fmt.Sprintf(`{"type":%q%s,%q:%s}`, b.typ, items, b.kw, v) }
		without := fmt.Sprintf(`{"type":%q%s}`, b.typ, items)
		ms = append(ms,
			mutation{name: b.kw + " raised", base: with(b.low), head: with(b.high)},
			mutation{name: b.kw + " lowered", base: with(b.high), head: with(b.low)},
			mutation{name: b.kw + " added", base: without, head: with(b.high)},
			mutation{name: b.kw + " removed", base: with(b.high), head: without},
		)
	}
	str := func(extra string) string { return `{"type":"string"` + extra + `}` }
	ms = append(ms,
		mutation{name: "enum widened", base: str(`,"enum":["a","b"]`), head: str(`,"enum":["a","b","c"]`)},
		mutation{name: "enum narrowed", base: str(`,"enum":["a","b"]`), head: str(`,"enum":["a"]`)},
		mutation{name: "pattern added", base: str(""), head: str(`,"pattern":"^a"`)},
		mutation{name: "pattern removed", base: str(`,"pattern":"^a"`), head: str("")},
		mutation{name: "pattern changed", base: str(`,"pattern":"^a"`), head: str(`,"pattern":"^b"`)},
		mutation{name: "format added", base: str(""), head: str(`,"format":"email"`)},
		mutation{name: "format removed", base: str(`,"format":"email"`), head: str("")},
		mutation{name: "format changed", base: str(`,"format":"email"`), head: str(`,"format":"uri"`)},
		mutation{name: "type widened", base: `{"type":"integer"}`, head: `{"type":"number"}`},
		mutation{name: "type narrowed", base: `{"type":"number"}`, head: `{"type":"integer"}`},
		mutation{name: "type changed", base: `{"type":"string"}`, head: `{"type":"boolean"}`},
		mutation{name: "made required", base: str(""), head: str(""), required: [2]bool{false, true}},
		mutation{name: "made optional", base: str(""), head: str(""), required: [2]bool{true, false}},
		mutation{name: "optional property added", base: "", head: str("")},
		mutation{name: "optional property removed", base: str(""), head: "",
			exception: "HTTP and events differ on both sides: oasdiff does not flag the response (a client handles an optional field's absence) and warns on the request (an old client may still send it); " +
				"for events an open schema still admits old events carrying it (nothing backward), while new events may carry it with any value old consumers check (compat: needs care, forward)"},
		mutation{name: "required property removed", base: str(""), head: "", required: [2]bool{true, false},
			exception: "request side: as for an optional property, an open event schema still admits old events carrying it; oasdiff warns on the request"},
		mutation{name: "additionalProperties false added", base: str(""), head: str(""), closed: [2]bool{false, true},
			exception: "oasdiff has no additionalProperties rule; for events, closing an object refuses old events carrying other properties (backward)"},
		mutation{name: "additionalProperties false removed", base: str(""), head: str(""), closed: [2]bool{true, false},
			exception: "oasdiff has no additionalProperties rule; for events, reopening lets new events carry properties old consumers refuse (forward)"},
	)
	return ms
}

// openapi wraps a detail schema as the request body and the 200 response body of one
// operation: a producer changing the schema is a server changing its response (old clients
// read it: forward), and a consumer changing it is a server changing its request body (old
// clients send it: backward).
func openapi(detail string) string {
	return `{"openapi":"3.0.3","info":{"title":"events","version":"1"},"paths":{"/events":{"post":{` +
		`"requestBody":{"required":true,"content":{"application/json":{"schema":` + detail + `}}},` +
		`"responses":{"200":{"description":"ok","content":{"application/json":{"schema":` + detail + `}}}}}}}}`
}

// detail is the detail schema with property p ("" leaves p out).
func detail(prop string, required, closed bool) string {
	req, props := "", `"k":{"type":"string"}`
	if required {
		req = `,"required":["p"]`
	}
	if closed {
		req += `,"additionalProperties":false`
	}
	if prop != "" {
		props += `,"p":` + prop
	}
	return `{"type":"object"` + req + `,"properties":{` + props + `}}`
}

// oasdiffSides runs `oasdiff breaking` and says which sides it reports an error on.
func oasdiffSides(t *testing.T, bin, base, head string) (request, response bool, ids []string) {
	t.Helper()
	dir := t.TempDir()
	b, h := filepath.Join(dir, "base.json"), filepath.Join(dir, "head.json")
	if err := os.WriteFile(b, []byte(openapi(base)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h, []byte(openapi(head)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "breaking", b, h, "--format", "json").Output()
	if err != nil {
		t.Fatalf("oasdiff breaking: %v\n%s", err, out)
	}
	var findings []struct {
		ID    string `json:"id"`
		Level int    `json:"level"`
	}
	if err := json.Unmarshal(out, &findings); err != nil && len(out) > 0 && strings.TrimSpace(string(out)) != "null" {
		t.Fatalf("oasdiff output: %v\n%s", err, out)
	}
	for _, f := range findings {
		ids = append(ids, fmt.Sprintf("%s(%d)", f.ID, f.Level))
		if f.Level < 2 { // INFO is not a break; WARN is oasdiff's "may break" (a changed pattern, a removed optional property)
			continue
		}
		switch {
		case strings.HasPrefix(f.ID, "request-"):
			request = true
		case strings.HasPrefix(f.ID, "response-"):
			response = true
		}
	}
	return request, response, ids
}

// TestAgainstOasdiff: an independent breaking-change checker agrees with compat's directions
// on every single-mutation pair its HTTP rules apply to. Forward (old consumers read new
// events) is oasdiff's response side; backward (new consumers read old events) its request side.
func TestAgainstOasdiff(t *testing.T) {
	bin, err := verifytest.Tool("oasdiff")
	verifytest.SkipIfMissing(t, err)
	if err != nil {
		t.Fatal(err)
	}
	agreed, exceptions := 0, 0
	for _, m := range mutations() {
		base, head := detail(m.base, m.required[0], m.closed[0]), detail(m.head, m.required[1], m.closed[1])
		r := compat.Compare([]compat.Contract{contract(t, "t.x", "s", base)}, []compat.Contract{contract(t, "t.x", "s", head)})
		forward, backward := false, false
		var kinds []string
		for _, f := range r.Findings {
			kinds = append(kinds, string(f.Kind))
			if f.Breaking || compat.Spec(f.Kind).Effect == compat.Care {
				forward = forward || f.Direction == compat.Forward || f.Direction == compat.Both
				backward = backward || f.Direction == compat.Backward || f.Direction == compat.Both
			}
		}
		request, response, ids := oasdiffSides(t, bin, base, head)
		t.Logf("%-22s compat %v forward=%v backward=%v | oasdiff response=%v request=%v %v", m.name, kinds, forward, backward, response, request, ids)
		if m.exception != "" {
			exceptions++
			continue
		}
		if forward != response || backward != request {
			t.Errorf("%s: compat breaks forward=%v backward=%v; oasdiff errs on response=%v request=%v (%v)", m.name, forward, backward, response, request, ids)
			continue
		}
		agreed++
	}
	if agreed == 0 {
		t.Fatal("no pair compared")
	}
	t.Logf("%d pairs agree; %d listed as exceptions", agreed, exceptions)
}
