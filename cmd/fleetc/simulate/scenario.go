package simulate

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

// FaultKind is what a scenario's fault does to the fleet.
type FaultKind string

// The faults a scenario can list.
const (
	Throttle FaultKind = "throttle" // every call through a model policy is answered 429 with retry-after
	Outage   FaultKind = "outage"   // every step of a class fails retryably (its handler or target is down)
	Spike    FaultKind = "spike"    // arrivals of every class are multiplied by a factor
	Burst    FaultKind = "burst"    // a class gets Count steps more, evenly over the fault's span
)

// Fault is one entry of a scenario's faults: a kind active over [At, At+For).
type Fault struct {
	Kind   FaultKind
	At     time.Duration
	For    time.Duration
	Policy string // Throttle
	// RetryAfter is what the throttle's 429s name (0: none). The router benches a deployment
	// for a named retry-after rather than its policy's cooldown; a provider names its next
	// window, never past the fault's end.
	RetryAfter time.Duration
	Class      string  // Outage, Burst
	Factor     float64 // Spike
	Count      int     // Burst
}

// End is when the fault stops.
func (f Fault) End() time.Duration { return f.At + f.For }

// active says the fault holds at t (seconds).
func (f Fault) active(t float64) bool { return t >= f.At.Seconds() && t < f.End().Seconds() }

// Scenario is what a simulation runs: faults in time and, optionally, other traffic.
type Scenario struct {
	Faults []Fault
	// Traffic overrides the spec's traffic field by field; nil keeps it.
	Traffic *TrafficOverride
}

// TrafficOverride holds the spec's traffic fields a scenario states; nil fields keep the spec's.
type TrafficOverride struct {
	ConversationsPerMinute  *float64
	StepsPerConversation    *float64
	StepDuration            *time.Duration
	ConcurrentConversations *int
	FanOutItems             *float64
}

// Apply overrides t with the fields the scenario states.
func (o *TrafficOverride) Apply(t capacity.Traffic) capacity.Traffic {
	if o == nil {
		return t
	}
	if o.ConversationsPerMinute != nil {
		t.ConversationsPerMinute = *o.ConversationsPerMinute
	}
	if o.StepsPerConversation != nil {
		t.StepsPerConversation = *o.StepsPerConversation
	}
	if o.StepDuration != nil {
		t.StepDuration = *o.StepDuration
	}
	if o.ConcurrentConversations != nil {
		t.ConcurrentConversations = *o.ConcurrentConversations
	}
	if o.FanOutItems != nil {
		t.FanOutItems = *o.FanOutItems
	}
	return t
}

// lastFaultEnd is when the scenario's last fault stops (0 without faults). A burst is
// traffic, not a fault: drain is measured from the end of the last fault that is not one.
func (s *Scenario) lastFaultEnd() time.Duration {
	var end time.Duration
	for _, f := range s.Faults {
		if f.Kind != Burst {
			end = max(end, f.End())
		}
	}
	return end
}

// ActsOn says the fault acts on class a: an outage of a, a throttle of a's model policy or of
// one of its fallbacks, or a spike (every class). A burst is traffic, not a fault.
func (f Fault) ActsOn(a *ir.Agent) bool {
	switch f.Kind {
	case Outage:
		return f.Class == a.Name
	case Throttle:
		seen := map[*ir.Model]bool{}
		var walk func(*ir.Model) bool
		walk = func(m *ir.Model) bool {
			if m == nil || seen[m] {
				return false
			}
			seen[m] = true
			return m.Name == f.Policy || slices.ContainsFunc(m.Fallbacks, walk)
		}
		return walk(a.Model)
	case Spike:
		return true
	}
	return false
}

// classFaultEnd is when the last fault acting on a stops (0: none does, or no scenario).
func (s *Scenario) classFaultEnd(a *ir.Agent) time.Duration {
	var end time.Duration
	if s == nil {
		return end
	}
	for _, f := range s.Faults {
		if f.ActsOn(a) {
			end = max(end, f.End())
		}
	}
	return end
}

// bursts is the scenario's steps that arrive in bursts.
func (s *Scenario) bursts() int {
	n := 0
	for _, f := range s.Faults {
		if f.Kind == Burst {
			n += f.Count
		}
	}
	return n
}

// PosError is a scenario error at a line and column of its file.
type PosError struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *PosError) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// ParseScenario reads a scenario file's bytes and checks it against the fleet: the policies
// and classes it names exist. Every error says where in the file it is.
func ParseScenario(name string, src []byte, f *ir.Fleet) (*Scenario, error) {
	p := &parser{file: name, fleet: f}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return &Scenario{}, nil // an empty scenario: the spec's traffic, no faults
		}
		return nil, &PosError{File: name, Line: 1, Col: 1, Msg: "YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	s := &Scenario{}
	if len(doc.Content) == 0 {
		return s, nil
	}
	root := doc.Content[0]
	err := p.mapping(root, "scenario", map[string]func(*yaml.Node) error{
		"faults":  func(n *yaml.Node) error { return p.faults(n, s) },
		"traffic": func(n *yaml.Node) error { return p.traffic(n, s) },
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

type parser struct {
	file  string
	fleet *ir.Fleet
}

func (p *parser) errAt(n *yaml.Node, format string, args ...any) error {
	return &PosError{File: p.file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// mapping walks a mapping node, handing each known key's value to its function; an unknown
// key is an error naming the known ones.
func (p *parser) mapping(n *yaml.Node, what string, fields map[string]func(*yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "%s must be a mapping", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fn, ok := fields[k.Value]
		if !ok {
			return p.errAt(k, "%s has no field %q (known: %s)", what, k.Value, strings.Join(sortedKeys(fields), ", "))
		}
		if seen[k.Value] {
			return p.errAt(k, "%s states %q twice", what, k.Value)
		}
		seen[k.Value] = true
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) faults(n *yaml.Node, s *Scenario) error {
	if n.Kind != yaml.SequenceNode {
		return p.errAt(n, "faults must be a list")
	}
	for i, fn := range n.Content {
		what := fmt.Sprintf("faults[%d]", i)
		var ft Fault
		var set []*yaml.Node
		err := p.mapping(fn, what, map[string]func(*yaml.Node) error{
			"at":  func(v *yaml.Node) error { return p.duration(v, what+".at", &ft.At, true) },
			"for": func(v *yaml.Node) error { return p.duration(v, what+".for", &ft.For, false) },
			"throttle": func(v *yaml.Node) error {
				set, ft.Kind = append(set, v), Throttle
				return p.mapping(v, what+".throttle", map[string]func(*yaml.Node) error{
					"policy": func(v *yaml.Node) error { return p.name(v, what+".throttle.policy", &ft.Policy, p.policies()) },
					"retry_after": func(v *yaml.Node) error {
						return p.duration(v, what+".throttle.retry_after", &ft.RetryAfter, false)
					},
				})
			},
			"outage": func(v *yaml.Node) error {
				set, ft.Kind = append(set, v), Outage
				return p.mapping(v, what+".outage", map[string]func(*yaml.Node) error{
					"class": func(v *yaml.Node) error { return p.name(v, what+".outage.class", &ft.Class, p.classes()) },
				})
			},
			"spike": func(v *yaml.Node) error {
				set, ft.Kind = append(set, v), Spike
				return p.mapping(v, what+".spike", map[string]func(*yaml.Node) error{
					"factor": func(v *yaml.Node) error { return p.number(v, what+".spike.factor", &ft.Factor, false) },
				})
			},
			"burst": func(v *yaml.Node) error {
				set, ft.Kind = append(set, v), Burst
				return p.mapping(v, what+".burst", map[string]func(*yaml.Node) error{
					"class": func(v *yaml.Node) error { return p.name(v, what+".burst.class", &ft.Class, p.classes()) },
					"count": func(v *yaml.Node) error {
						var x float64
						if err := p.number(v, what+".burst.count", &x, false); err != nil {
							return err
						}
						if x != math.Trunc(x) || x > MaxSteps {
							return p.errAt(v, "%s.burst.count must be a whole number up to %d", what, MaxSteps)
						}
						ft.Count = int(x)
						return nil
					},
				})
			},
		})
		if err != nil {
			return err
		}
		switch {
		case len(set) != 1:
			return p.errAt(fn, "%s must state exactly one of throttle, outage, spike or burst", what)
		case !has(fn, "for"):
			return p.errAt(fn, "%s needs for: how long the fault lasts (e.g. 120s)", what)
		case ft.Kind == Throttle && ft.Policy == "":
			return p.errAt(set[0], "%s.throttle needs policy: the model policy that answers 429", what)
		case ft.Kind == Outage && ft.Class == "":
			return p.errAt(set[0], "%s.outage needs class: the agent class whose steps fail", what)
		case ft.Kind == Spike && ft.Factor == 0:
			return p.errAt(set[0], "%s.spike needs factor: the multiple of the arrival rate", what)
		case ft.Kind == Burst && (ft.Class == "" || ft.Count == 0):
			return p.errAt(set[0], "%s.burst needs class and count: the class whose steps arrive, and how many", what)
		}
		s.Faults = append(s.Faults, ft)
	}
	return nil
}

func (p *parser) traffic(n *yaml.Node, s *Scenario) error {
	o := &TrafficOverride{}
	s.Traffic = o
	float := func(dst **float64, what string) func(*yaml.Node) error {
		return func(v *yaml.Node) error {
			*dst = new(float64)
			return p.number(v, "traffic."+what, *dst, true)
		}
	}
	return p.mapping(n, "traffic", map[string]func(*yaml.Node) error{
		"conversations_per_minute": float(&o.ConversationsPerMinute, "conversations_per_minute"),
		"steps_per_conversation":   float(&o.StepsPerConversation, "steps_per_conversation"),
		"fan_out_items":            float(&o.FanOutItems, "fan_out_items"),
		"step_duration": func(v *yaml.Node) error {
			o.StepDuration = new(time.Duration)
			return p.duration(v, "traffic.step_duration", o.StepDuration, false)
		},
		"concurrent_conversations": func(v *yaml.Node) error {
			var x float64
			if err := p.number(v, "traffic.concurrent_conversations", &x, true); err != nil {
				return err
			}
			if x != math.Trunc(x) || x > math.MaxInt32 {
				return p.errAt(v, "traffic.concurrent_conversations must be a whole number")
			}
			o.ConcurrentConversations = new(int)
			*o.ConcurrentConversations = int(x)
			return nil
		},
	})
}

// duration reads a duration in the spec's syntax (90s, 2m, 1h); zeroOK admits 0.
func (p *parser) duration(n *yaml.Node, what string, dst *time.Duration, zeroOK bool) error {
	if n.Kind != yaml.ScalarNode {
		return p.errAt(n, "%s must be a duration such as 90s or 2m", what)
	}
	d, err := spec.ParseDuration(n.Value)
	if err != nil {
		return p.errAt(n, "%s: %v", what, err)
	}
	if d < 0 || d == 0 && !zeroOK {
		return p.errAt(n, "%s must be above 0", what)
	}
	*dst = d
	return nil
}

// number reads a finite number; zeroOK admits 0, negatives never.
func (p *parser) number(n *yaml.Node, what string, dst *float64, zeroOK bool) error {
	v, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return p.errAt(n, "%s must be a number, not %q", what, n.Value)
	}
	if v < 0 || v == 0 && !zeroOK {
		return p.errAt(n, "%s must be above 0", what)
	}
	*dst = v
	return nil
}

// name reads a name that must be one of known.
func (p *parser) name(n *yaml.Node, what string, dst *string, known []string) error {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return p.errAt(n, "%s must be a name", what)
	}
	for _, k := range known {
		if k == n.Value {
			*dst = n.Value
			return nil
		}
	}
	msg := fmt.Sprintf("%s: the fleet has no %q (it has: %s)", what, n.Value, strings.Join(known, ", "))
	if s := spec.Suggest(n.Value, known); s != "" {
		msg += "; did you mean " + strconv.Quote(s) + "?"
	}
	return p.errAt(n, "%s", msg)
}

func (p *parser) policies() []string {
	var out []string
	for _, m := range p.fleet.Models {
		out = append(out, m.Name)
	}
	return out
}

func (p *parser) classes() []string {
	var out []string
	for _, a := range p.fleet.Agents {
		out = append(out, a.Name)
	}
	return out
}

// has says mapping node n states key.
func has(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}
