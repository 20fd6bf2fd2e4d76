package eventschema

import (
	"encoding/json"
	"maps"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/fleetc/fleetc/spec/jsonptr"
)

// maxDepth bounds $ref recursion and nesting while inventing an example.
const maxDepth = 24

// generator invents the smallest deterministic value a schema accepts: required properties
// only, the first enum value, the lowest number in range, strings shaped by format, pattern
// and length. It is best effort; the caller validates the result.
type generator struct {
	root map[string]any // the envelope document, for $ref resolution
	// left is how many more bytes the example may take; generation stops once it is below
	// zero, so a schema of many `minLength: 1048576` or `minItems` fields costs at most one
	// entry's worth of work, not gigabytes.
	left int
}

// spend charges n bytes of example; false once the budget is gone.
func (g *generator) spend(n int) bool {
	g.left -= n
	return g.left >= 0
}

// Sample values by format.
var formatSamples = map[string]string{
	"date-time": ExampleTime,
	"date":      "2026-01-01",
	"time":      "00:00:00Z",
	"uuid":      "00000000-0000-4000-8000-000000000001",
	"email":     "agent@example.com",
	"hostname":  "example.com",
	"ipv4":      "192.0.2.1",
	"ipv6":      "2001:db8::1",
	"uri":       "https://example.com/",
}

func (g *generator) value(v any, name string, depth int) any {
	s, ok := v.(map[string]any)
	if !ok || depth > maxDepth || !g.spend(len(name)+4) {
		return nil
	}
	s = g.flatten(s, depth)
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch typeOf(s) {
	case "object":
		return g.object(s, depth)
	case "array":
		return g.array(s, name, depth)
	case "integer":
		return number(s, true)
	case "number":
		return number(s, false)
	case "boolean":
		return true
	case "null":
		return nil
	default:
		if minL, ok := intOf(s["minLength"]); ok && !g.spend(minL) {
			return nil
		}
		return str(s, name)
	}
}

// flatten resolves $ref and folds allOf and the first anyOf/oneOf branch into one schema.
func (g *generator) flatten(s map[string]any, depth int) map[string]any {
	for i := 0; i < maxDepth; i++ {
		r, ok := s["$ref"].(string)
		if !ok {
			break
		}
		target, _ := g.resolve(r).(map[string]any)
		if target == nil {
			return map[string]any{}
		}
		s = target
	}
	parts := []map[string]any{}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := s[kw].([]any)
		if kw != "allOf" && len(list) > 1 {
			list = list[:1]
		}
		for _, sub := range list {
			if m, ok := sub.(map[string]any); ok && depth < maxDepth {
				parts = append(parts, g.flatten(m, depth+1))
			}
		}
	}
	if len(parts) == 0 {
		return s
	}
	out := map[string]any{}
	for k, v := range s {
		if k != "allOf" && k != "anyOf" && k != "oneOf" {
			out[k] = v
		}
	}
	for _, p := range parts {
		for k, v := range p {
			switch k {
			case "properties":
				props, _ := out[k].(map[string]any)
				merged := map[string]any{}
				for pk, pv := range props {
					merged[pk] = pv
				}
				for pk, pv := range v.(map[string]any) {
					if _, ok := merged[pk]; !ok {
						merged[pk] = pv
					}
				}
				out[k] = merged
			case "required":
				req, _ := out[k].([]any)
				for _, r := range v.([]any) {
					if !contains(req, r) {
						req = append(req, r)
					}
				}
				out[k] = req
			default:
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
		}
	}
	return out
}

// resolve follows a local JSON pointer ref in the envelope document.
func (g *generator) resolve(ref string) any {
	var cur any = g.root
	frag := strings.TrimPrefix(ref, "#")
	if frag == "" {
		return cur
	}
	for _, seg := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		seg = jsonptr.Unescape(seg)
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if name, ok := x.(string); ok && name != "null" {
				return name
			}
		}
		if len(t) > 0 {
			return "null"
		}
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := s[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "patternProperties", "minProperties", "dependencies"):
		return "object"
	case has("items", "minItems", "maxItems", "uniqueItems", "additionalItems"):
		return "array"
	case has("minimum", "maximum", "multipleOf"):
		return "number"
	}
	return "string"
}

func (g *generator) object(s map[string]any, depth int) map[string]any {
	props, _ := s["properties"].(map[string]any)
	out := map[string]any{}
	var want []string
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				want = append(want, name)
			}
		}
	}
	if minP, ok := intOf(s["minProperties"]); ok {
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if len(want) >= minP {
				break
			}
			if !containsString(want, name) {
				want = append(want, name)
			}
		}
	}
	deps, _ := s["dependencies"].(map[string]any)
	for i := 0; i < len(want); i++ {
		name := want[i]
		if _, done := out[name]; done {
			continue
		}
		sub, ok := props[name]
		if !ok {
			sub = s["additionalProperties"]
			if _, isSchema := sub.(map[string]any); !isSchema {
				sub = map[string]any{}
			}
		}
		out[name] = g.value(sub, name, depth+1)
		if d, ok := deps[name].([]any); ok {
			for _, extra := range d {
				if n, ok := extra.(string); ok && !containsString(want, n) {
					want = append(want, n)
				}
			}
		}
	}
	return out
}

func (g *generator) array(s map[string]any, name string, depth int) []any {
	n, _ := intOf(s["minItems"])
	tuple, isTuple := s["items"].([]any)
	out := []any{}
	for i := 0; i < n && g.left >= 0; i++ {
		var sub any = s["items"]
		if isTuple {
			sub = s["additionalItems"]
			if i < len(tuple) {
				sub = tuple[i]
			}
		}
		if _, ok := sub.(map[string]any); !ok {
			sub = map[string]any{}
		}
		v := g.value(sub, name, depth+1)
		if str, ok := v.(string); ok && i > 0 && s["uniqueItems"] == true {
			v = str + strconv.Itoa(i) // keep unique strings distinct
		}
		out = append(out, v)
	}
	return out
}

// number picks 1, or the nearest value the bounds and multipleOf allow.
func number(s map[string]any, integer bool) json.Number {
	lo, hi := math.Inf(-1), math.Inf(1)
	if m, ok := floatOf(s["minimum"]); ok {
		lo = m
	}
	if m, ok := floatOf(s["maximum"]); ok {
		hi = m
	}
	exLo, exHi := s["exclusiveMinimum"] == true, s["exclusiveMaximum"] == true
	if integer {
		// Integer bounds are inclusive from here on.
		if exLo {
			lo = math.Floor(lo) + 1
		} else {
			lo = math.Ceil(lo)
		}
		if exHi {
			hi = math.Ceil(hi) - 1
		} else {
			hi = math.Floor(hi)
		}
		exLo, exHi = false, false
	}
	v := 1.0
	if v < lo || (exLo && v <= lo) {
		v = lo
		if exLo {
			v = lo + 1
			if !math.IsInf(hi, 1) {
				v = (lo + hi) / 2
			}
		}
	}
	if v > hi || (exHi && v >= hi) {
		v = hi
		if exHi {
			v = hi - 1
			if !math.IsInf(lo, -1) {
				v = (lo + hi) / 2
			}
		}
	}
	if k, ok := floatOf(s["multipleOf"]); ok && k > 0 {
		if m := math.Ceil(v/k) * k; m <= hi && !(exHi && m >= hi) {
			v = m
		} else {
			v = math.Floor(v/k) * k
		}
	}
	if integer {
		return json.Number(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	}
	return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
}

// str builds a string from format, else pattern, else the property name, fitted to the lengths.
func str(s map[string]any, name string) string {
	if f, ok := s["format"].(string); ok {
		if v, ok := formatSamples[f]; ok {
			return v
		}
	}
	v := "example"
	if name != "" {
		v = name + "-example"
	}
	if p, ok := s["pattern"].(string); ok {
		if m, ok := fromPattern(p); ok {
			v = m
		}
	}
	runes := []rune(v)
	if maxL, ok := intOf(s["maxLength"]); ok && len(runes) > maxL {
		runes = runes[:maxL]
	}
	if minL, ok := intOf(s["minLength"]); ok {
		for len(runes) < minL {
			runes = append(runes, 'x')
		}
	}
	return string(runes)
}

// fromPattern invents a short string that matches the regular expression p (RE2 syntax, which
// covers the usual JSON Schema patterns); ok is false when it cannot.
func fromPattern(p string) (string, bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !emit(re.Simplify(), &b) {
		return "", false
	}
	if m, err := regexp.MatchString(p, b.String()); err != nil || !m {
		return "", false
	}
	return b.String(), true
}

func emit(re *syntax.Regexp, b *strings.Builder) bool {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		r, ok := pick(re.Rune)
		if !ok {
			return false
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		return emit(re.Sub[0], b)
	case syntax.OpPlus:
		return emit(re.Sub[0], b)
	case syntax.OpRepeat:
		for i := 0; i < re.Min; i++ {
			if !emit(re.Sub[0], b) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !emit(sub, b) {
				return false
			}
		}
	case syntax.OpAlternate:
		return emit(re.Sub[0], b)
	case syntax.OpNoMatch:
		return false
	}
	// Star, Quest, anchors, word boundaries and empty matches emit nothing.
	return true
}

// pick prefers a letter or digit from a character class (pairs of lo-hi ranges).
func pick(ranges []rune) (rune, bool) {
	if len(ranges) < 2 {
		return 0, false
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r-ranges[i] < 256; r++ {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r, true
			}
		}
	}
	return ranges[0], true
}

func floatOf(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func intOf(v any) (int, bool) {
	f, ok := floatOf(v)
	if !ok || f < 0 || f > 1<<20 {
		return 0, false
	}
	return int(f), true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
