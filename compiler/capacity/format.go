package capacity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Num writes a number with thousands separators and at most one decimal; numbers too large
// for an int64 are written in exponent form, never as a wrapped integer.
func Num(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "∞"
	}
	if math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	neg := v < 0
	v = math.Abs(v)
	r := math.Round(v*10) / 10
	whole := int64(r)
	frac := ""
	if d := int64(math.Round((r - float64(whole)) * 10)); d != 0 {
		frac = "." + strconv.FormatInt(d, 10)
	}
	s := strconv.FormatInt(whole, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String() + frac
}

// share writes a fraction as a percentage with one decimal.
func share(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/10, 'f', 1, 64) + " %"
}

// multiple writes a headroom as "4×" (or "0.5×: broken").
func multiple(h float64) string {
	s := strconv.FormatFloat(h, 'f', 2, 64)
	if h >= 10 {
		s = Num(math.Floor(h*10) / 10)
	}
	return s + "×"
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the report for a terminal.
func (r *Report) WriteText(w io.Writer) error { return r.write(w, false) }

// WriteMarkdown writes the report as a pull-request comment.
func (r *Report) WriteMarkdown(w io.Writer) error { return r.write(w, true) }

// table renders rows as a markdown table or as aligned text columns.
type table struct {
	md   bool
	w    io.Writer
	rows [][]string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) flush() {
	if len(t.rows) == 0 {
		return
	}
	if t.md {
		for i, r := range t.rows {
			fmt.Fprintf(t.w, "| %s |\n", strings.Join(r, " | "))
			if i == 0 {
				fmt.Fprintf(t.w, "|%s\n", strings.Repeat(" --- |", len(r)))
			}
		}
	} else {
		tw := tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
		for _, r := range t.rows {
			fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	fmt.Fprintln(t.w)
	t.rows = nil
}

func (r *Report) write(w io.Writer, md bool) error {
	t := &table{md: md, w: w}
	r.writeIntro(t)
	if len(r.Classes) == 0 {
		return nil
	}
	r.writeFirstQuota(t)
	r.writeTotals(t)
	r.writeClasses(t)
	r.writeWorkflows(t)
	r.writeModels(t)
	r.writeQuotas(t)
	r.writeCost(t)
	return nil
}

// heading writes a section title: level+1 #s in markdown, a plain line in text.
func (t *table) heading(level int, s string) {
	if t.md {
		fmt.Fprintf(t.w, "%s %s\n\n", strings.Repeat("#", level+1), s)
	} else {
		fmt.Fprintf(t.w, "%s\n", s)
	}
}

// writeIntro is the title, the traffic the report assumes and the notes on it: all a fleet
// without classes gets.
func (r *Report) writeIntro(t *table) {
	tr := r.Traffic
	dur := "each class's step.p95"
	if tr.StepDurationSeconds > 0 {
		dur = Num(tr.StepDurationSeconds) + " s per step"
	}
	t.heading(1, fmt.Sprintf("Capacity of fleet %s in %s", r.Fleet, r.Region))
	fmt.Fprintf(t.w, "Traffic: %s conversations/min × %s steps, %s.\n\n", Num(tr.ConversationsPerMinute), Num(tr.StepsPerConversation), dur)
	for _, n := range r.Notes {
		if t.md {
			fmt.Fprintf(t.w, "- %s\n", n)
		} else {
			fmt.Fprintf(t.w, "note: %s\n", n)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(t.w)
	}
}

// writeFirstQuota names the quota that limits growth, the one line a reader needs first.
func (r *Report) writeFirstQuota(t *table) {
	if q := r.FirstQuotaToBreak; q != nil {
		verdict := "first quota to break as traffic grows"
		if q.Breaks() {
			verdict = "already broken at this traffic"
		}
		fmt.Fprintf(t.w, "First quota to break: %s (%s), at %s the traffic (%s).\n\n", q.Name, q.Scope, multiple(q.Headroom), verdict)
	}
}

// writeTotals sets the seed's request arithmetic beside fleet-worker's, which batches.
func (r *Report) writeTotals(t *table) {
	t.heading(2, "Fleet totals")
	t.row("figure", "as the seed counts", "as fleet-worker issues")
	s, k := r.SeedModel, r.WorkerModel
	t.row("steps/min", Num(s.StepsPerMinute), Num(k.StepsPerMinute))
	t.row("SQS requests/min", Num(s.SQSRequestsPerMinute), Num(k.SQSRequestsPerMinute))
	t.row("SQS requests/day", Num(s.SQSRequestsPerDay), Num(k.SQSRequestsPerDay))
	t.row("PutEvents entries/day", Num(s.PutEventsEntriesPerDay), Num(k.PutEventsEntriesPerDay))
	t.row("PutEvents requests/day", Num(s.PutEventsRequestsPerDay), Num(k.PutEventsRequestsPerDay))
	t.row("DynamoDB writes/day", Num(s.DynamoDBWritesPerDay), Num(k.DynamoDBWritesPerDay))
	t.row("Step Functions requests/day", Num(s.StepFunctionsRequestsDay), Num(k.StepFunctionsRequestsDay))
	t.row("steps in flight", Num(s.StepsInFlight), Num(k.StepsInFlight))
	t.row("in-flight share of a queue's cap", share(s.InFlightShareOfCap), share(k.InFlightShareOfCap)+" (busiest queue)")
	t.row("SendTask* calls/s", Num(s.CallbacksPerSecond), Num(k.CallbacksPerSecond))
	t.row("callback headroom", optMultiple(s.CallbackHeadroom), optMultiple(k.CallbackHeadroom))
	t.flush()
}

// writeClasses is one row per agent class.
func (r *Report) writeClasses(t *table) {
	t.heading(2, "Classes")
	t.row("class", "runtime", "steps/s", "in flight", "of cap", "SQS req/day", "DynamoDB writes/day", "scaling")
	for _, c := range r.Classes {
		t.row(c.Name, c.Runtime, Num(c.StepsPerSecond), Num(c.InFlight), share(c.InFlightShareOfCap),
			Num(c.SQSRequestsPerDay), Num(c.DynamoDBWritesPerDay), c.scaling())
	}
	t.flush()
}

// writeWorkflows is one row per workflow, when the fleet has any.
func (r *Report) writeWorkflows(t *table) {
	if len(r.Workflows) > 0 {
		t.heading(2, "Workflows")
		t.row("workflow", "type", "executions/s", "transitions/execution", "transitions/s")
		for _, wf := range r.Workflows {
			t.row(wf.Name, wf.Type, Num(wf.ExecutionsPerSecond), strconv.Itoa(wf.TransitionsPerExecution), Num(wf.TransitionsPerSecond))
		}
		t.flush()
	}
}

// writeModels is one row per model policy: what its classes ask for against its budget.
func (r *Report) writeModels(t *table) {
	if len(r.Models) > 0 {
		t.heading(2, "Model policies")
		t.row("policy", "classes", "tokens/min", "budget", "max_in_flight", "in flight the budget sustains")
		for _, u := range r.Models {
			budget, sustains := "not set", "unknown"
			if u.TokensPerMinuteLimit > 0 {
				budget = Num(float64(u.TokensPerMinuteLimit))
			}
			if u.BudgetInFlight > 0 {
				sustains = Num(u.BudgetInFlight)
				if u.Overrun {
					sustains += " (max_in_flight overruns it)"
				}
			}
			mif := "uncapped"
			if u.MaxInFlight > 0 {
				mif = strconv.Itoa(u.MaxInFlight)
			}
			t.row(u.Name, strings.Join(u.Classes, ", "), Num(u.TokensPerMinute), budget, mif, sustains)
		}
		t.flush()
	}
}

// writeQuotas lists every quota, tightest first, with the rule that guards it.
func (r *Report) writeQuotas(t *table) {
	t.heading(2, "Quotas, tightest first")
	t.row("quota", "for", "usage", "limit", "headroom", "rule")
	for _, q := range r.Quotas {
		hr := multiple(q.Headroom)
		if q.Breaks() {
			hr += " BROKEN"
		}
		rule := q.Rule
		if rule == "" {
			rule = "-"
		}
		t.row(q.Name, q.Scope, Num(q.Usage)+" "+q.Unit, Num(q.Limit), hr, rule)
	}
	t.flush()
}

// writeCost is the estimated bill, with the date of its prices and what it leaves out.
func (r *Report) writeCost(t *table) {
	if c := r.Cost; c != nil {
		t.heading(2, fmt.Sprintf("Estimated monthly cost: $%s", Num(c.MonthlyUSD)))
		t.row("service", "units/month", "USD/month")
		for _, l := range c.Lines {
			t.row(l.Service, Num(l.Units)+" "+l.Unit, "$"+Num(l.MonthlyUSD))
		}
		t.flush()
		dated := "List prices as of " + c.AsOf
		if c.ModelPricesAsOf != "" {
			dated += " (AWS) and " + c.ModelPricesAsOf + " (models)"
		}
		fmt.Fprintf(t.w, "%s; an estimate. Not included: %s.\n", dated, strings.Join(c.NotIncluded, ", "))
	}
}

func (c Class) scaling() string {
	switch {
	case c.KEDA != nil:
		verdict := "covered"
		if !c.KEDA.Covered {
			verdict = "NOT covered"
		}
		return fmt.Sprintf("%s replicas needed, max %s: %s", Num(float64(c.KEDA.ReplicasNeeded)), Num(float64(c.KEDA.Max)), verdict)
	case c.Lambda != nil:
		s := fmt.Sprintf("concurrency %s, provisioned pollers ≥ %d", Num(c.Lambda.Concurrency), c.Lambda.MinPollers)
		if p := c.Lambda.Provisioned; p != nil {
			s += fmt.Sprintf(" (configured %d–%d)", p.Min, p.Max)
		}
		return s
	case c.FIFO != nil:
		return fmt.Sprintf("FIFO %s of %s TPS", Num(c.FIFO.TPS), Num(c.FIFO.Limit))
	}
	return "-"
}

func optMultiple(h *float64) string {
	if h == nil {
		return "no callbacks"
	}
	return multiple(*h)
}
