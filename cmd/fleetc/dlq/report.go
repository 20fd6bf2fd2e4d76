package dlq

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler/jsonreport"
)

// Report is `fleetc dlq`'s document.
type Report struct {
	FormatVersion int           `json:"format_version"`
	Fleet         string        `json:"fleet"`
	Time          time.Time     `json:"time"`
	Classes       []ClassReport `json:"classes"`
	// Delivery is the bus's delivery DLQ (nil when one class was asked for).
	Delivery *DeliveryReport `json:"delivery,omitempty"`
}

// ClassReport is one class's DLQ.
type ClassReport struct {
	Class string `json:"class"`
	DLQ   string `json:"dlq"`
	// Depth is the DLQ's approximate size; InFlight how many of those another reader held
	// (the peek could not see them).
	Depth    int `json:"depth"`
	InFlight int `json:"in_flight"`
	// OldestAgeSeconds is the age of the oldest dead letter peeked (nil when none was).
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"`
	Peeked           int      `json:"peeked"`
	Complete         bool     `json:"complete"`
	// Incomplete says why the peek did not see every message ("" when it did).
	Incomplete string  `json:"incomplete,omitempty"`
	Codes      []Group `json:"codes"`
}

// RedriveReport is `fleetc dlq redrive --format json`'s document: the header of Report, the
// class, and what the invocation did.
type RedriveReport struct {
	FormatVersion int       `json:"format_version"`
	Fleet         string    `json:"fleet"`
	Time          time.Time `json:"time"`
	Class         string    `json:"class"`
	DLQ           string    `json:"dlq"`
	Queue         string    `json:"queue"`
	Result
	// Canary is the canaries' verdict (nil without --canary).
	Canary *Verdict `json:"canary,omitempty"`
	// Stopped says why the redrive stopped before moving all it planned ("" when it did not).
	Stopped string `json:"stopped,omitempty"`
}

// NewRedriveReport is the document of a redrive of t in fleet.
func NewRedriveReport(fleet string, t *Target, now time.Time) *RedriveReport {
	return &RedriveReport{FormatVersion: jsonreport.FormatVersion, Fleet: fleet, Time: now.UTC(), Class: t.Class, DLQ: t.DLQ, Queue: t.Queue,
		Result: Result{FailedAgainCodes: []Group{}, LeftCodes: []Group{}}}
}

// Inspect peeks at every target's DLQ (URLs resolved).
func Inspect(ctx context.Context, api API, fleet string, targets []*Target, limit int, now time.Time) (*Report, error) {
	r := &Report{FormatVersion: jsonreport.FormatVersion, Fleet: fleet, Time: now.UTC(), Classes: []ClassReport{}}
	for _, t := range targets {
		p, err := Peek(ctx, api, t.DLQURL, limit)
		if err != nil {
			return nil, fmt.Errorf("class %s: peek %s: %w", t.Class, t.DLQ, err)
		}
		c := ClassReport{Class: t.Class, DLQ: t.DLQ, Depth: p.Depth, InFlight: p.Elsewhere,
			Peeked: len(p.Letters), Complete: p.Complete, Codes: GroupByCode(p.Letters)}
		if len(p.Letters) > 0 {
			age := now.Sub(p.Letters[0].SentAt).Seconds()
			c.OldestAgeSeconds = &age
		}
		c.Incomplete = p.why(limit, t.FIFO)
		r.Classes = append(r.Classes, c)
	}
	return r, nil
}

// why explains an incomplete peek.
func (p *Peeked) why(limit int, fifo bool) string {
	if p.Complete {
		return ""
	}
	var parts []string
	if p.Limited {
		parts = append(parts, fmt.Sprintf("stopped at --limit %d", limit))
	}
	if p.Elsewhere > 0 {
		parts = append(parts, fmt.Sprintf("%d in flight (another reader holds them)", p.Elsewhere))
	}
	if fifo && !p.Limited {
		parts = append(parts, "a FIFO DLQ hides a group's later messages while its first is held")
	}
	if len(parts) == 0 {
		parts = append(parts, "the queue's counts are approximate")
	}
	return fmt.Sprintf("saw %d of about %d: %s", len(p.Letters), p.Depth, strings.Join(parts, "; "))
}

// WriteText prints r for a person.
func (r *Report) WriteText(w io.Writer) {
	total := 0
	for _, c := range r.Classes {
		total += c.Depth
	}
	fmt.Fprintf(w, "fleet %s: %s in %s\n", r.Fleet, Count(total, "dead letter"), Count(len(r.Classes), "class DLQ"))
	for _, c := range r.Classes {
		fmt.Fprintf(w, "\n%s (%s): %s", c.Class, c.DLQ, Count(c.Depth, "dead letter"))
		if c.InFlight > 0 {
			fmt.Fprintf(w, ", %d of them in flight", c.InFlight)
		}
		if c.OldestAgeSeconds != nil {
			fmt.Fprintf(w, ", oldest %s", Age(time.Duration(*c.OldestAgeSeconds*float64(time.Second))))
		}
		fmt.Fprintln(w)
		if c.Incomplete != "" {
			fmt.Fprintf(w, "  peek incomplete: %s\n", c.Incomplete)
		}
		writeGroups(w, c.Codes)
	}
	if r.Delivery != nil {
		r.Delivery.writeText(w)
	}
}

// writeGroups prints each ERROR_CODE group with its latest letter as a sample.
func writeGroups(w io.Writer, gs []Group) {
	for _, g := range gs {
		fmt.Fprintf(w, "  %-24s %4d  first %s  last %s\n", g.Code, g.Count, g.FirstSeen.Format(time.RFC3339), g.LastSeen.Format(time.RFC3339))
		fmt.Fprintf(w, "    sample %s (attempts %d): %s\n", g.Sample.MessageID, g.Sample.Attempts, oneLine(g.Sample.Message))
		body := oneLine(g.Sample.Body)
		if g.Sample.Truncated {
			body += " …"
		}
		fmt.Fprintf(w, "    body %s\n", body)
	}
}

// Age is d rounded for a person: 42s, 3m, 5h, 2d.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// oneLine is view.OneLine: what a dead letter says, shown as one harmless line.
func oneLine(s string) string { return view.OneLine(s) }
