package simulate

import (
	"errors"
	"testing"
	"time"
)

// Every field of the Interface parses: the three fault kinds and the traffic override.
func TestParseScenario(t *testing.T) {
	f := load(t, docsFleet)
	s := scenario(t, f, `faults:
  - {at: 20m, for: 120s, throttle: {policy: haiku}}
  - {at: 1h, for: 2h, outage: {class: coder}}
  - {at: 0s, for: 5m, spike: {factor: 2.5}}
  - {at: 1m, for: 10s, throttle: {policy: haiku, retry_after: 3s}}
  - {at: 2m, for: 30s, burst: {class: coder, count: 40}}
traffic:
  conversations_per_minute: 400
  steps_per_conversation: 6
  step_duration: 45s
  concurrent_conversations: 100
  fan_out_items: 3
`)
	want := []Fault{
		{Kind: Throttle, At: 20 * time.Minute, For: 2 * time.Minute, Policy: "haiku"},
		{Kind: Outage, At: time.Hour, For: 2 * time.Hour, Class: "coder"},
		{Kind: Spike, For: 5 * time.Minute, Factor: 2.5},
		{Kind: Throttle, At: time.Minute, For: 10 * time.Second, Policy: "haiku", RetryAfter: 3 * time.Second},
		{Kind: Burst, At: 2 * time.Minute, For: 30 * time.Second, Class: "coder", Count: 40},
	}
	if len(s.Faults) != len(want) {
		t.Fatalf("%d faults", len(s.Faults))
	}
	for i := range want {
		if s.Faults[i] != want[i] {
			t.Errorf("fault %d: %+v, want %+v", i, s.Faults[i], want[i])
		}
	}
	tr := s.Traffic
	if *tr.ConversationsPerMinute != 400 || *tr.StepsPerConversation != 6 || *tr.StepDuration != 45*time.Second || *tr.ConcurrentConversations != 100 || *tr.FanOutItems != 3 {
		t.Errorf("traffic %+v", tr)
	}
	if s.lastFaultEnd() != 3*time.Hour {
		t.Errorf("last fault ends at %s", s.lastFaultEnd())
	}
}

// Each mistake is reported at its line and column.
func TestParseScenarioErrors(t *testing.T) {
	f := load(t, docsFleet)
	for _, c := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{"faults:\n  - {at: 1m, for: 1m, throttle: {policy: haikoo}}\n", 2, 42, `faults[0].throttle.policy: the fleet has no "haikoo" (it has: haiku); did you mean "haiku"?`},
		{"faults:\n  - at: 1m\n    for: 1m\n    outage: {klass: coder}\n", 4, 14, `faults[0].outage has no field "klass" (known: class)`},
		{"faults:\n  - {at: 1m, throttle: {policy: haiku}}\n", 2, 5, "faults[0] needs for: how long the fault lasts (e.g. 120s)"},
		{"faults:\n  - {at: 1m, for: 1m, spike: {factor: 2}, outage: {class: coder}}\n", 2, 5, "faults[0] must state exactly one of throttle, outage, spike or burst"},
		{"faults:\n  - {at: 1m, for: 0s, spike: {factor: 2}}\n", 2, 19, "faults[0].for must be above 0"},
		{"faults:\n  - {at: 1m, for: 1m, spike: {factor: -2}}\n", 2, 39, "faults[0].spike.factor must be above 0"},
		{"traffic:\n  conversation_per_minute: 5\n", 2, 3, `traffic has no field "conversation_per_minute" (known: concurrent_conversations, conversations_per_minute, fan_out_items, step_duration, steps_per_conversation)`},
		{"faults: {at: 1m}\n", 1, 9, "faults must be a list"},
		{"faults:\n  - {at: 1m, for: 1m, burst: {class: coder}}\n", 2, 30, "faults[0].burst needs class and count: the class whose steps arrive, and how many"},
		{"faults:\n  - {at: 1m, for: 1m, burst: {class: coder, count: 2.5}}\n", 2, 52, "faults[0].burst.count must be a whole number up to 20000000"},
	} {
		_, err := ParseScenario("s.yaml", []byte(c.src), f)
		var pe *PosError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v, want a positioned error", c.src, err)
			continue
		}
		if pe.Line != c.line || pe.Col != c.col || pe.Msg != c.msg {
			t.Errorf("%q:\n got %d:%d %s\nwant %d:%d %s", c.src, pe.Line, pe.Col, pe.Msg, c.line, c.col, c.msg)
		}
	}
}
