package ir

import (
	"fmt"
	"strings"
)

// Matches reports whether a detail passes the match of the class's rule (pattern): every
// matched field, a dotted path into the detail, holds one of its values.
func (c *Consumes) Matches(detail map[string]any) bool {
	for _, m := range c.Match {
		if !m.Holds(detail) {
			return false
		}
	}
	return true
}

// Holds reports whether detail's field m.Field holds one of m.Values (compared as printed,
// so a JSON number matches the spec's integer).
func (m Match) Holds(detail map[string]any) bool {
	var v any = detail
	for _, part := range strings.Split(m.Field, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = obj[part]; !ok {
			return false
		}
	}
	for _, want := range m.Values {
		if fmt.Sprint(want) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}

// ConsumersOf are the classes whose rule takes the event with this detail-type and source
// (in f.Agents order), before their match: see Consumes.Matches for a given detail.
func (f *Fleet) ConsumersOf(detailType, source string) []*Agent {
	var out []*Agent
	for _, a := range f.Agents {
		if a.Consumes != nil && a.Consumes.Event != nil && a.Consumes.Event.DetailType == detailType && a.Consumes.Event.Source == source {
			out = append(out, a)
		}
	}
	return out
}
