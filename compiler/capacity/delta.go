package capacity

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Delta is what a spec change does to capacity: the fleet's rates, its quotas' use, the first
// quota to break and the monthly cost, before (base) and after (head), each side under its
// own spec's traffic. Only figures that move are listed. A side whose traffic cannot be
// computed with has null "before" or "after" values and a note saying why.
type Delta struct {
	Notes             []string      `json:"notes"`
	Figures           []FigureDelta `json:"figures"`
	Quotas            []QuotaDelta  `json:"quotas"`
	FirstQuotaToBreak *BreakDelta   `json:"first_quota_to_break,omitempty"`
	Cost              *Pair         `json:"monthly_cost_usd,omitempty"`
}

// Pair is one number before and after; null where the side has no such figure.
type Pair struct {
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
}

// FigureDelta is one fleet-wide rate (as fleet-worker issues its requests).
type FigureDelta struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	Pair
}

// QuotaDelta is one quota's use before and after; null where a side draws nothing on it.
type QuotaDelta struct {
	Name   string    `json:"name"`
	Scope  string    `json:"scope"`
	Rule   string    `json:"rule,omitempty"`
	Unit   string    `json:"unit"`
	Before *QuotaUse `json:"before"`
	After  *QuotaUse `json:"after"`
}

// QuotaUse is a quota's usage, limit, usage as a fraction of the limit and headroom. NoLimit:
// the side draws on it but states no limit (limit, share and headroom are then 0).
type QuotaUse struct {
	Usage        float64 `json:"usage"`
	Limit        float64 `json:"limit"`
	ShareOfLimit float64 `json:"share_of_limit"`
	Headroom     float64 `json:"headroom"`
	NoLimit      bool    `json:"no_limit,omitempty"`
}

// BreakDelta is the first quota to break as traffic grows, on each side.
type BreakDelta struct {
	Before *Quota `json:"before"`
	After  *Quota `json:"after"`
}

// computed says the report has figures (its traffic was usable).
func (r *Report) computed() bool { return r != nil && len(r.Classes) > 0 }

// Compare computes the capacity delta from base to head (reports from Build).
func Compare(base, head *Report) *Delta {
	d := &Delta{Notes: []string{}, Figures: []FigureDelta{}, Quotas: []QuotaDelta{}}
	for _, s := range []struct {
		name string
		r    *Report
	}{{"base", base}, {"head", head}} {
		if !s.r.computed() {
			why := "no traffic"
			if s.r != nil && len(s.r.Notes) > 0 {
				why = s.r.Notes[0]
			}
			d.Notes = append(d.Notes, fmt.Sprintf("%s: no capacity figures (%s)", s.name, why))
		}
	}
	bOK, hOK := base.computed(), head.computed()
	if !bOK && !hOK {
		d.Notes = d.Notes[:0] // neither side sized: nothing moves, nothing to say
		return d
	}
	pick := func(r *Report, ok bool, f func(*Report) float64) *float64 {
		if !ok {
			return nil
		}
		v := f(r)
		return &v
	}
	for _, f := range figures {
		p := Pair{Before: pick(base, bOK, f.get), After: pick(head, hOK, f.get)}
		if p.moved() {
			d.Figures = append(d.Figures, FigureDelta{Name: f.name, Unit: f.unit, Pair: p})
		}
	}
	d.Quotas = quotaDeltas(base, head, bOK, hOK)
	var fb, fa *Quota
	if bOK {
		fb = base.FirstQuotaToBreak
	}
	if hOK {
		fa = head.FirstQuotaToBreak
	}
	if (fb == nil) != (fa == nil) || (fb != nil && (fb.Name != fa.Name || fb.Scope != fa.Scope || differ(fb.Headroom, fa.Headroom))) {
		d.FirstQuotaToBreak = &BreakDelta{Before: fb, After: fa}
	}
	monthly := func(r *Report) float64 { return r.Cost.MonthlyUSD }
	c := Pair{Before: pick(base, bOK && base.Cost != nil, monthly), After: pick(head, hOK && head.Cost != nil, monthly)}
	if c.moved() {
		d.Cost = &c
	}
	return d
}

// Empty says nothing moved and nothing needs saying.
func (d *Delta) Empty() bool {
	return d == nil || (len(d.Notes) == 0 && len(d.Figures) == 0 && len(d.Quotas) == 0 && d.FirstQuotaToBreak == nil && d.Cost == nil)
}

// figures are the fleet rates a delta compares, as fleet-worker issues requests (the
// figures the bill and the quotas follow).
var figures = []struct {
	name, unit string
	get        func(*Report) float64
}{
	{"conversations", "per minute", func(r *Report) float64 { return r.Traffic.ConversationsPerMinute }},
	{"steps", "per minute", func(r *Report) float64 { return r.WorkerModel.StepsPerMinute }},
	{"SQS requests", "per day", func(r *Report) float64 { return r.WorkerModel.SQSRequestsPerDay }},
	{"PutEvents requests", "per day", func(r *Report) float64 { return r.WorkerModel.PutEventsRequestsPerDay }},
	{"DynamoDB writes", "per day", func(r *Report) float64 { return r.WorkerModel.DynamoDBWritesPerDay }},
	{"Step Functions requests", "per day", func(r *Report) float64 { return r.WorkerModel.StepFunctionsRequestsDay }},
	{"steps in flight", "", func(r *Report) float64 { return r.WorkerModel.StepsInFlight }},
	{"SendTask* calls", "per second", func(r *Report) float64 { return r.WorkerModel.CallbacksPerSecond }},
}

func quotaDeltas(base, head *Report, bOK, hOK bool) []QuotaDelta {
	type key struct{ name, scope string }
	byKey := map[key]*QuotaDelta{}
	var keys []key
	add := func(qs []Quota, after bool) {
		for _, q := range qs {
			k := key{q.Name, q.Scope}
			qd := byKey[k]
			if qd == nil {
				qd = &QuotaDelta{Name: q.Name, Scope: q.Scope, Rule: q.Rule, Unit: q.Unit}
				byKey[k] = qd
				keys = append(keys, k)
			}
			u := &QuotaUse{Usage: q.Usage, NoLimit: true}
			if q.Limit > 0 {
				u = &QuotaUse{Usage: q.Usage, Limit: q.Limit, ShareOfLimit: q.Usage / q.Limit, Headroom: q.Headroom}
			}
			if after {
				qd.After = u
			} else {
				qd.Before = u
			}
		}
	}
	if bOK {
		add(base.Quotas, false)
		add(base.unlimited, false)
	}
	if hOK {
		add(head.Quotas, true)
		add(head.unlimited, true)
	}
	out := []QuotaDelta{}
	for _, k := range keys {
		qd := byKey[k]
		b, a := qd.Before, qd.After
		if b != nil && a != nil && !differ(b.Usage, a.Usage) && !differ(b.Limit, a.Limit) && b.NoLimit == a.NoLimit {
			continue
		}
		if (b == nil || b.NoLimit) && (a == nil || a.NoLimit) {
			continue // no limit on either side: nothing a reviewer can weigh
		}
		out = append(out, *qd)
	}
	// Tightest after the change first (a quota the head no longer draws on last).
	tight := func(q QuotaDelta) float64 {
		if q.After == nil || q.After.NoLimit {
			return math.MaxFloat64
		}
		return q.After.Headroom
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ti, tj := tight(out[i]), tight(out[j]); ti != tj {
			return ti < tj
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Scope < out[j].Scope
	})
	return out
}

func (p Pair) moved() bool {
	switch {
	case p.Before == nil && p.After == nil:
		return false
	case p.Before == nil || p.After == nil:
		return true
	}
	return differ(*p.Before, *p.After)
}

// differ compares two figures computed by the same arithmetic, past float rounding.
func differ(a, b float64) bool {
	return math.Abs(a-b) > roundingNoise*math.Max(math.Abs(a), math.Abs(b))
}

// Lines renders the delta one line per figure, for a terminal or a list in a PR comment:
// "model tokens per minute (fast): 40.0 % → 85.0 % of quota (1,600,000 → 3,400,000 tokens/min)".
func (d *Delta) Lines() []string {
	var out []string
	for _, n := range d.Notes {
		out = append(out, "note: "+n)
	}
	if b := d.FirstQuotaToBreak; b != nil {
		out = append(out, "first quota to break: "+breakText(b.Before)+" → "+breakText(b.After))
	}
	if c := d.Cost; c != nil {
		out = append(out, fmt.Sprintf("estimated cost/month: %s → %s", usd(c.Before), usd(c.After)))
	}
	for _, q := range d.Quotas {
		out = append(out, q.line())
	}
	for _, f := range d.Figures {
		name := f.Name
		if f.Unit != "" {
			name += " " + f.Unit
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", name, optNum(f.Before), optNum(f.After)))
	}
	return out
}

func (q QuotaDelta) line() string {
	b, a := q.Before, q.After
	var s string
	switch {
	case b != nil && a != nil && !b.NoLimit && !a.NoLimit:
		s = fmt.Sprintf("%s (%s): %s → %s of quota (%s → %s %s", q.Name, q.Scope, share(b.ShareOfLimit), share(a.ShareOfLimit), Num(b.Usage), Num(a.Usage), q.Unit)
		if differ(b.Limit, a.Limit) {
			s += fmt.Sprintf("; limit %s → %s", Num(b.Limit), Num(a.Limit))
		}
	case a == nil:
		s = fmt.Sprintf("%s (%s): %s → not drawn on (was %s %s", q.Name, q.Scope, b.state(), Num(b.Usage), q.Unit)
	case b == nil:
		s = fmt.Sprintf("%s (%s): not drawn on → %s (%s %s", q.Name, q.Scope, a.state(), Num(a.Usage), q.Unit)
	default: // a limit set on one side only
		s = fmt.Sprintf("%s (%s): %s → %s (%s → %s %s", q.Name, q.Scope, b.state(), a.state(), Num(b.Usage), Num(a.Usage), q.Unit)
	}
	if a != nil && a.ShareOfLimit > 1 {
		s += ", BROKEN"
	}
	return s + ")"
}

// state is one side of a quota line: its share of the limit, or that it has none.
func (u *QuotaUse) state() string {
	if u.NoLimit {
		return "no limit set"
	}
	return share(u.ShareOfLimit) + " of quota"
}

func breakText(q *Quota) string {
	if q == nil {
		return "none"
	}
	return fmt.Sprintf("%s (%s) at %s", q.Name, q.Scope, multiple(q.Headroom))
}

func usd(v *float64) string {
	if v == nil {
		return "not estimated"
	}
	return "$" + Num(*v)
}

func optNum(v *float64) string {
	if v == nil {
		return "not computed"
	}
	return Num(*v)
}

// Markdown renders the delta as a list for a PR comment; "" when it is empty.
func (d *Delta) Markdown() string {
	if d.Empty() {
		return ""
	}
	var b strings.Builder
	for _, l := range d.Lines() {
		fmt.Fprintf(&b, "- %s\n", strings.NewReplacer("|", `\|`, "*", `\*`).Replace(l))
	}
	return b.String()
}
