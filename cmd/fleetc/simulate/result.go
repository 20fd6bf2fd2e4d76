package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/jsonreport"
)

// Result is what a simulation predicts, per class.
type Result struct {
	FormatVersion   int           `json:"format_version"`
	DurationSeconds float64       `json:"duration_seconds"`
	Seed            uint64        `json:"seed"`
	Faults          []FaultJSON   `json:"faults"`
	Classes         []ClassResult `json:"classes"`
	Diagnostics     []string      `json:"diagnostics"`
}

// FaultJSON is one fault of the scenario as the run applied it.
type FaultJSON struct {
	Kind       FaultKind `json:"kind"`
	AtSeconds  float64   `json:"at_seconds"`
	ForSeconds float64   `json:"for_seconds"`
	Policy     string    `json:"policy,omitempty"`
	RetryAfter float64   `json:"retry_after_seconds,omitempty"`
	Class      string    `json:"class,omitempty"`
	Factor     float64   `json:"factor,omitempty"`
	Count      int       `json:"count,omitempty"`
}

// ClassResult is one class's summary and time series.
type ClassResult struct {
	Name    string  `json:"name"`
	Summary Summary `json:"summary"`
	Series  []Point `json:"series"`
}

// Summary is a class's figures over the run.
type Summary struct {
	Arrived      int `json:"arrived"`
	Completed    int `json:"completed"`
	DeadLettered int `json:"dead_lettered"`
	// DeadReasons counts the dead letters by reason and last cause.
	DeadReasons  map[string]int `json:"dead_letter_reasons"`
	PeakBacklog  int            `json:"peak_backlog"`
	MeanInFlight float64        `json:"mean_in_flight"`
	// CapacityInFlight is fleetc capacity's Little's-law figure for the same traffic.
	CapacityInFlight float64 `json:"capacity_in_flight"`
	P50Latency       float64 `json:"p50_latency_seconds"`
	P99Latency       float64 `json:"p99_latency_seconds"`
	// Drain is the seconds from the end of the last fault until the class's queue is empty
	// and nothing waits in process; null without faults, or when it never drained.
	Drain *float64 `json:"drain_seconds"`
	// Settled is the seconds from the end of the last fault acting on the class (its
	// outages, throttles of its policies, spikes; the start of the run when none does) until
	// its last step was finished (completed or dead-lettered), when every step that arrived
	// was finished by the end of the run: a figure for scenarios whose traffic stops
	// (bursts). Null otherwise.
	Settled *float64 `json:"settled_seconds"`
	// Tokens are the model tokens of the completed steps (traffic.tokens_per_step each);
	// ModelCostUSD what they cost at the price of the policy that served each step, from
	// the table fleetc capacity reads (capacity.PriceOf). Null when none was priced.
	Tokens       int64    `json:"tokens"`
	ModelCostUSD *float64 `json:"model_cost_usd"`
}

// Point is one sample of a class's series.
type Point struct {
	T                float64 `json:"t"`
	Backlog          int     `json:"backlog"`
	InFlight         int     `json:"in_flight"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	Completed        int     `json:"completed"`
	DeadLettered     int     `json:"dead_lettered"`
	Replicas         int     `json:"replicas"` // workers ready (KEDA replicas; Lambda/AgentCore concurrency units)
}

func (s *sim) result(o Options) *Result {
	r := &Result{
		FormatVersion: jsonreport.FormatVersion, DurationSeconds: s.end, Seed: o.Seed,
		Faults: []FaultJSON{}, Classes: []ClassResult{}, Diagnostics: append([]string{}, s.diags...),
	}
	for _, ft := range s.faults {
		r.Faults = append(r.Faults, FaultJSON{Kind: ft.Kind, AtSeconds: ft.At.Seconds(), ForSeconds: ft.For.Seconds(), Policy: ft.Policy,
			RetryAfter: ft.RetryAfter.Seconds(), Class: ft.Class, Factor: ft.Factor, Count: ft.Count})
	}
	for _, c := range s.classes {
		slices.Sort(c.latencies)
		sum := Summary{
			Arrived: c.arrived, Completed: c.completed, DeadLettered: c.dead, DeadReasons: c.deadReasons,
			PeakBacklog: c.peakBacklog, MeanInFlight: round(c.area / (s.end - s.warm)), CapacityInFlight: round(c.capIn),
			P50Latency: round(quantile(c.latencies, 0.50)), P99Latency: round(quantile(c.latencies, 0.99)),
		}
		if len(s.faults) > 0 && c.drained {
			d := round(math.Max(0, c.drainAt-s.faultEnd))
			sum.Drain = &d
		}
		sum.Tokens = c.tokens
		if c.costed {
			usd := round(c.costUSD)
			sum.ModelCostUSD = &usd
		}
		if len(s.faults) > 0 && c.arrived > 0 && c.completed+c.dead == c.arrived {
			d := round(math.Max(0, c.lastFinish-c.faultEnd))
			sum.Settled = &d
		}
		if len(s.faults) > 0 && !c.drained {
			r.Diagnostics = append(r.Diagnostics, fmt.Sprintf("%s: still draining when the run ended (%d in the queue, %d waiting in process): run longer with --duration", c.a.Name, c.backlog(), c.waiting))
		}
		r.Classes = append(r.Classes, ClassResult{Name: c.a.Name, Summary: sum, Series: c.series})
	}
	return r
}

// quantile of sorted values (nearest rank); 0 when empty.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// round keeps three decimals: the output is a prediction, and short numbers diff well.
func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the summary table, the faults and the diagnostics.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Simulated %s (seed %d)", seconds(r.DurationSeconds), r.Seed)
	if len(r.Faults) == 0 {
		b.WriteString(", no faults\n")
	} else {
		b.WriteString(", faults:\n")
		for _, f := range r.Faults {
			fmt.Fprintf(&b, "  %s at %s for %s%s\n", f.Kind, seconds(f.AtSeconds), seconds(f.ForSeconds), faultTarget(f))
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// SETTLED only when a class's traffic stopped and it finished everything (bursts).
	settled := slices.ContainsFunc(r.Classes, func(c ClassResult) bool { return c.Summary.Settled != nil })
	head := "CLASS\tARRIVED\tCOMPLETED\tDEAD-LETTERED\tPEAK BACKLOG\tMEAN IN FLIGHT\tCAPACITY IN FLIGHT\tP50\tP99\tDRAIN"
	if settled {
		head += "\tSETTLED"
	}
	fmt.Fprintln(tw, head)
	orDash := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return seconds(*v)
	}
	for _, c := range r.Classes {
		s := c.Summary
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s", c.Name, s.Arrived, s.Completed, s.DeadLettered, s.PeakBacklog,
			capacity.Num(s.MeanInFlight), capacity.Num(s.CapacityInFlight), seconds(s.P50Latency), seconds(s.P99Latency), orDash(s.Drain))
		if settled {
			fmt.Fprintf(tw, "\t%s", orDash(s.Settled))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	var after []string
	for _, c := range r.Classes {
		for _, k := range sortedKeys(c.Summary.DeadReasons) {
			after = append(after, fmt.Sprintf("%s: %d dead-lettered %s", c.Name, c.Summary.DeadReasons[k], k))
		}
	}
	for _, d := range r.Diagnostics {
		after = append(after, "note: "+d)
	}
	if len(after) > 0 {
		b.WriteString("\n" + strings.Join(after, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func faultTarget(f FaultJSON) string {
	switch f.Kind {
	case Throttle:
		if f.RetryAfter > 0 {
			return fmt.Sprintf(": policy %s, retry-after %s", f.Policy, seconds(f.RetryAfter))
		}
		return ": policy " + f.Policy
	case Outage:
		return ": class " + f.Class
	case Spike:
		return fmt.Sprintf(": × %g", f.Factor)
	case Burst:
		return fmt.Sprintf(": %d steps of class %s", f.Count, f.Class)
	}
	return ""
}

// seconds formats a duration in seconds as 95s, 2m05s or 1h00m.
func seconds(v float64) string {
	s := int(math.Round(v))
	switch {
	case s < 60:
		if v < 10 && v != math.Trunc(v) {
			return fmt.Sprintf("%.1fs", v)
		}
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}
