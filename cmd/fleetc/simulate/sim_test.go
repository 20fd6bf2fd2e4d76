package simulate

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

var update = flag.Bool("update", false, "rewrite docs/simulate/wave.svg")

// docsFleet is docs/simulate.md's fleet: the seed's two classes at 800 conversations/min × 12
// steps, with workers that carry it.
const docsFleet = "../../../docs/simulate/fleet.yaml"

func load(t testing.TB, path string) *ir.Fleet {
	t.Helper()
	_, f, ds := compiler.Load(path)
	if f == nil || ds.HasErrors() {
		t.Fatalf("%s: %v", path, ds)
	}
	return f
}

func scenario(t testing.TB, f *ir.Fleet, src string) *Scenario {
	t.Helper()
	s, err := ParseScenario("s.yaml", []byte(src), f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t testing.TB, f *ir.Fleet, o Options) *Result {
	t.Helper()
	r, err := Run(f, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func classOf(t testing.TB, r *Result, name string) ClassResult {
	t.Helper()
	for _, c := range r.Classes {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no class %s", name)
	return ClassResult{}
}

// Steady state: every class's mean in-flight work agrees with capacity's Little's law (rate ×
// step duration) within 2 %, computed here from capacity itself, not copied from the report.
func TestSteadyStateAgreesWithCapacity(t *testing.T) {
	f := load(t, docsFleet)
	m := capacity.Of(f)
	r := run(t, f, Options{Duration: time.Hour, Seed: 1})
	for _, a := range f.Agents {
		c := classOf(t, r, a.Name)
		want := m.InFlight(a)
		if want < 1000 {
			t.Fatalf("%s: capacity says %.0f in flight; the fixture should be the seed's scale", a.Name, want)
		}
		if got := c.Summary.MeanInFlight; math.Abs(got-want)/want > 0.02 {
			t.Errorf("%s: mean in flight %.1f, capacity %.1f: off by %.1f %%", a.Name, got, want, 100*math.Abs(got-want)/want)
		}
		if c.Summary.DeadLettered != 0 {
			t.Errorf("%s: %d dead-lettered without faults", a.Name, c.Summary.DeadLettered)
		}
	}
}

// A 120 s 429 wave: the policy's callers are held through it, the slots fill, the backlog
// rises, and after the wave it drains to 0 with nothing dead-lettered.
func TestThrottleWaveDrains(t *testing.T) {
	f := load(t, docsFleet)
	sc := scenario(t, f, "faults:\n  - {at: 20m, for: 120s, throttle: {policy: haiku}}\n")
	r := run(t, f, Options{Duration: time.Hour, Seed: 1, Scenario: sc})
	for _, c := range r.Classes {
		before, during := 0, 0
		for _, p := range c.Series {
			switch {
			case p.T >= 10*60 && p.T < 20*60:
				before = max(before, p.Backlog)
			case p.T >= 20*60 && p.T < 25*60:
				during = max(during, p.Backlog)
			}
		}
		if during < 1000 || during < 10*before {
			t.Errorf("%s: backlog peaked at %d in the wave, %d before it: the wave should pile work up", c.Name, during, before)
		}
		// KEDA scales to scaling.max while work is held, and back down once the cooldown
		// after the last scale-up has passed.
		peak, end := 0, c.Series[len(c.Series)-1].Replicas
		for _, p := range c.Series {
			peak = max(peak, p.Replicas)
		}
		if sc := f.Agent(c.Name).Scaling; peak != sc.Max || end >= sc.Max {
			t.Errorf("%s: replicas peaked at %d and ended at %d; want scaling.max %d, then fewer", c.Name, peak, end, sc.Max)
		}
		drained := false
		for _, p := range c.Series {
			drained = drained || p.T > 22*60 && p.Backlog == 0
		}
		if !drained {
			t.Errorf("%s: the backlog never came back to 0 after the wave", c.Name)
		}
		if d := c.Summary.Drain; d == nil || *d <= 0 || *d > 600 {
			t.Errorf("%s: drain_seconds %s, want a few minutes after the wave", c.Name, drainString(d))
		}
		if c.Summary.DeadLettered != 0 {
			t.Errorf("%s: %d dead-lettered by a 2-minute throttle: %v", c.Name, c.Summary.DeadLettered, c.Summary.DeadReasons)
		}
	}
}

// A 2-hour outage of one class, past its 1 h run deadline: its work is dead-lettered with
// DeadlineExceeded; the other class is untouched.
func TestOutagePastDeadlineDeadLetters(t *testing.T) {
	f := load(t, docsFleet)
	sc := scenario(t, f, "faults:\n  - {at: 10m, for: 2h, outage: {class: coder}}\n")
	r := run(t, f, Options{Duration: 150 * time.Minute, Seed: 1, Scenario: sc})
	coder := classOf(t, r, "coder").Summary
	if coder.DeadLettered == 0 {
		t.Fatal("coder: nothing dead-lettered by a 2-hour outage past its 1 h deadline")
	}
	byDeadline := 0
	for k, n := range coder.DeadReasons {
		if strings.HasPrefix(k, "DeadlineExceeded") {
			byDeadline += n
		}
	}
	if byDeadline == 0 {
		t.Errorf("coder: no DeadlineExceeded among %v", coder.DeadReasons)
	}
	if n := classOf(t, r, "researcher").Summary.DeadLettered; n != 0 {
		t.Errorf("researcher: %d dead-lettered by the coder's outage", n)
	}
}

// The failure budget counts step windows (docs/faults.md): an outage shorter than a window is
// absorbed in process; one outlasting RetryLimit windows dead-letters RetriesExhausted. A
// trickle of traffic keeps the queue short, so a released message is received again at once.
func TestOutageSpendsStepWindows(t *testing.T) {
	f := load(t, docsFleet)
	f.Agents[0].Deadline = 0 // no run deadline: only step.max closes windows
	a := f.Agents[0]
	outage := func(d time.Duration) string {
		return "traffic: {conversations_per_minute: 10}\nfaults:\n  - {at: 10m, for: " + spec.FormatDuration(d) + ", outage: {class: " + a.Name + "}}\n"
	}
	short := run(t, f, Options{Duration: 40 * time.Minute, Seed: 2, Scenario: scenario(t, f, outage(time.Minute))})
	if s := classOf(t, short, a.Name).Summary; s.DeadLettered != 0 || s.Completed == 0 {
		t.Errorf("a 1-minute outage inside a %s window: %d dead-lettered, %d completed", a.StepMax, s.DeadLettered, s.Completed)
	}
	long := time.Duration(a.RetryLimit()+1) * a.StepMax
	r := run(t, f, Options{Duration: 10*time.Minute + long + 10*time.Minute, Seed: 2, Scenario: scenario(t, f, outage(long))})
	s := classOf(t, r, a.Name).Summary
	exhausted := 0
	for k, n := range s.DeadReasons {
		if strings.HasPrefix(k, "RetriesExhausted: ") {
			exhausted += n
		}
	}
	if s.DeadReasons["RetriesExhausted: the class's target is down (retryable)"] == 0 || exhausted != s.DeadLettered {
		t.Errorf("an outage of %d windows: %d dead-lettered, by reason %v; want all RetriesExhausted", a.RetryLimit()+1, s.DeadLettered, s.DeadReasons)
	}
}

// A throttled policy's calls go to its fallback while it cools down: with a free fallback the
// wave piles nothing up; with the fallback throttled too, the backlog rises as without one.
func TestThrottleFallsBack(t *testing.T) {
	f := load(t, docsFleet)
	haiku := f.Models[0]
	sonnet := &ir.Model{Name: "sonnet", Cooldown: time.Minute}
	haiku.Fallbacks = []*ir.Model{sonnet}
	f.Models = append(f.Models, sonnet)
	peak := func(faults string) int {
		r := run(t, f, Options{Duration: 30 * time.Minute, Seed: 6, Scenario: scenario(t, f, faults)})
		n := 0
		for _, c := range r.Classes {
			for _, p := range c.Series {
				if p.T >= 20*60 && p.T < 25*60 {
					n = max(n, p.Backlog)
				}
			}
		}
		return n
	}
	free := peak("faults:\n  - {at: 20m, for: 2m, throttle: {policy: haiku}}\n")
	both := peak("faults:\n  - {at: 20m, for: 2m, throttle: {policy: haiku}}\n  - {at: 20m, for: 2m, throttle: {policy: sonnet}}\n")
	if both < 1000 || free*5 > both {
		t.Errorf("backlog peaked at %d with sonnet free, %d with it throttled too: the fallback should absorb the wave", free, both)
	}
}

// A fleet-wide max_in_flight below the steps the traffic needs: steps wait in process for a
// slot, completions are bounded by cap / mean step duration, and steps whose window closes
// while they wait are released and finally dead-lettered with that cause.
func TestModelCapBoundsThroughput(t *testing.T) {
	f := load(t, docsFleet)
	const limit = 1000
	f.Models[0].MaxInFlight = limit
	r := run(t, f, Options{Duration: time.Hour, Seed: 5})
	d, _ := capacity.Of(f).StepDuration(f.Agents[0])
	bound := limit / d.Seconds() * r.DurationSeconds * 1.1
	completed, byCap := 0, 0
	for _, c := range r.Classes {
		completed += c.Summary.Completed
		for k, n := range c.Summary.DeadReasons {
			if strings.Contains(k, "max_in_flight") {
				byCap += n
			}
		}
	}
	if float64(completed) > bound || float64(completed) < bound/2 {
		t.Errorf("%d steps completed under max_in_flight %d; want about %.0f at most", completed, limit, bound)
	}
	if byCap == 0 {
		t.Errorf("no dead letter names max_in_flight: %v", r.Classes[0].Summary.DeadReasons)
	}
}

// Same fleet, scenario and seed: the same bytes, in every format; another seed differs.
func TestDeterministic(t *testing.T) {
	f := load(t, docsFleet)
	sc := scenario(t, f, "faults:\n  - {at: 5m, for: 1m, throttle: {policy: haiku}}\n  - {at: 8m, for: 1m, spike: {factor: 2}}\n  - {at: 10m, for: 1m, outage: {class: coder}}\n")
	out := func(seed uint64) string {
		r := run(t, f, Options{Duration: 15 * time.Minute, Seed: seed, Scenario: sc})
		var b bytes.Buffer
		for _, w := range []func(io.Writer) error{r.WriteJSON, r.WriteText, r.WriteSVG} {
			if err := w(&b); err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	a, b := out(7), out(7)
	if a != b {
		t.Error("two runs with seed 7 differ")
	}
	classes := func(seed uint64) string {
		b, _ := json.Marshal(run(t, f, Options{Duration: 15 * time.Minute, Seed: seed, Scenario: sc}).Classes)
		return string(b)
	}
	if classes(8) == classes(7) {
		t.Error("seeds 7 and 8 simulate the same")
	}
}

// A spike multiplies arrivals while it lasts.
func TestSpikeMultipliesArrivals(t *testing.T) {
	f := load(t, docsFleet)
	base := run(t, f, Options{Duration: 20 * time.Minute, Seed: 3})
	spiked := run(t, f, Options{Duration: 20 * time.Minute, Seed: 3, Scenario: scenario(t, f, "faults:\n  - {at: 0s, for: 10m, spike: {factor: 3}}\n")})
	for _, c := range base.Classes {
		b, s := float64(c.Summary.Arrived), float64(classOf(t, spiked, c.Name).Summary.Arrived)
		// 10 minutes at 3× and 10 at 1×: twice the arrivals.
		if ratio := s / b; math.Abs(ratio-2) > 0.05 {
			t.Errorf("%s: %0.f arrivals with the spike, %0.f without: ratio %.3f, want 2", c.Name, s, b, ratio)
		}
	}
}

// The scenario's traffic overrides the spec's: half the conversations, half the arrivals and
// half capacity's in-flight figure.
func TestScenarioTrafficOverride(t *testing.T) {
	f := load(t, docsFleet)
	base := run(t, f, Options{Duration: 10 * time.Minute, Seed: 4})
	half := run(t, f, Options{Duration: 10 * time.Minute, Seed: 4, Scenario: scenario(t, f, "traffic:\n  conversations_per_minute: 400\n")})
	for _, c := range base.Classes {
		h := classOf(t, half, c.Name).Summary
		if ratio := float64(h.Arrived) / float64(c.Summary.Arrived); math.Abs(ratio-0.5) > 0.03 {
			t.Errorf("%s: arrivals ratio %.3f at half the traffic", c.Name, ratio)
		}
		if h.CapacityInFlight*2 != c.Summary.CapacityInFlight {
			t.Errorf("%s: capacity in flight %v at half the traffic, %v at full", c.Name, h.CapacityInFlight, c.Summary.CapacityInFlight)
		}
	}
}

// A run past MaxSteps is refused before it starts.
func TestRefusesRunsPastMaxSteps(t *testing.T) {
	f := load(t, docsFleet)
	spike := scenario(t, f, "faults:\n  - {at: 1h, for: 1m, spike: {factor: 100}}\n")
	for _, o := range []Options{{Duration: 48 * time.Hour}, {Duration: 2 * time.Hour, Scenario: spike}} {
		if _, err := Run(f, o); err == nil || !strings.Contains(err.Error(), "shorten --duration") {
			t.Errorf("%s: %v", o.Duration, err)
		}
	}
}

// The JSON has the Interface's names.
func TestJSONNames(t *testing.T) {
	f := load(t, docsFleet)
	r := run(t, f, Options{Duration: 5 * time.Minute, Seed: 1, Scenario: scenario(t, f, "faults:\n  - {at: 1m, for: 1m, throttle: {policy: haiku}}\n")})
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format_version", "duration_seconds", "classes", "diagnostics"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no %q", k)
		}
	}
	c := doc["classes"].([]any)[0].(map[string]any)
	if c["name"] == nil {
		t.Error("class has no name")
	}
	sum := c["summary"].(map[string]any)
	for _, k := range []string{"arrived", "completed", "dead_lettered", "peak_backlog", "mean_in_flight", "p50_latency_seconds", "p99_latency_seconds", "drain_seconds"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary has no %q", k)
		}
	}
	pt := c["series"].([]any)[1].(map[string]any)
	for _, k := range []string{"t", "backlog", "in_flight", "oldest_age_seconds", "completed", "dead_lettered"} {
		if _, ok := pt[k]; !ok {
			t.Errorf("series point has no %q", k)
		}
	}
}

// --format svg is well-formed XML with an <svg> root and one panel title per class.
func TestSVGParses(t *testing.T) {
	f := load(t, docsFleet)
	r := run(t, f, Options{Duration: 10 * time.Minute, Seed: 1, Scenario: scenario(t, f, "faults:\n  - {at: 2m, for: 1m, throttle: {policy: haiku}}\n")})
	var b bytes.Buffer
	if err := r.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	assertSVG(t, b.Bytes(), r)
}

func assertSVG(t *testing.T, svg []byte, r *Result) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	root, polylines := "", 0
	titles := map[string]bool{}
	var inText bool
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Space + " " + e.Name.Local
			}
			inText = e.Name.Local == "text"
			if e.Name.Local == "polyline" {
				polylines++
			}
		case xml.CharData:
			if inText {
				titles[string(e)] = true
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q", root)
	}
	for _, c := range r.Classes {
		if !titles[c.Name] {
			t.Errorf("no panel titled %s", c.Name)
		}
	}
	if want := len(r.Classes) * len(svgLines); polylines != want {
		t.Errorf("%d polylines, want %d", polylines, want)
	}
}

// docs/simulate/wave.svg is what docs/simulate.md's command prints today.
func TestDocsWaveSVG(t *testing.T) {
	f := load(t, docsFleet)
	src, err := os.ReadFile("../../../docs/simulate/wave.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseScenario("wave.yaml", src, f)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, f, Options{Duration: time.Hour, Seed: 1, Scenario: sc})
	var b bytes.Buffer
	if err := r.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	const path = "../../../docs/simulate/wave.svg"
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(have, b.Bytes()) {
		t.Errorf("%s is not current (go test ./cmd/fleetc/simulate -run TestDocsWaveSVG -update)", path)
	}
	assertSVG(t, have, r)
}

// BenchmarkHour is one simulated hour: the seed's example fleet (examples/research-fleet,
// 125 steps/s) and docs/simulate.md's fleet (160 steps/s, workers that carry it).
func BenchmarkHour(b *testing.B) {
	for _, path := range []string{"../../../examples/research-fleet/fleet.yaml", docsFleet} {
		f := load(b, path)
		b.Run(strings.TrimSuffix(strings.TrimPrefix(path, "../../../"), "/fleet.yaml"), func(b *testing.B) {
			for b.Loop() {
				run(b, f, Options{Duration: time.Hour, Seed: 1})
			}
		})
	}
}

func drainString(d *float64) string {
	if d == nil {
		return "null"
	}
	return fmt.Sprint(*d)
}
