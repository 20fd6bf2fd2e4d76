package recovery

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/fleetc/fleetc/compiler/check"
	"github.com/fleetc/fleetc/compiler/ir"
)

// Replay is one replay of the fleet's archive into its bus, planned from the spec.
type Replay struct {
	Archive    string // archive name
	Bus        string // bus name
	From, To   time.Time
	Events     []string // detail-types asked for (none: every event)
	Consumers  []*ir.Agent
	RuleFilter bool // replay only to the consumers' rules (when Events names some)
	// Redeliveries are the rules outside the fleet the replay reaches: all of them without
	// a rule filter, none with one.
	Redeliveries []check.Redelivery
	// ForeignRules are rules on the deployed bus the spec does not define (set by Resolve
	// for a replay without a rule filter): their targets are unknown, so outside the fleet.
	ForeignRules []string

	// Set by Resolve.
	ArchiveARN, BusARN string
	RuleARNs           []string
	// Retention is the deployed archive's (0: events kept forever).
	Retention time.Duration

	now        time.Time
	fleetRules map[string]bool // the rules the spec defines on the bus
}

// Reach is how old the oldest event the replay can deliver is: from --from to now, but no
// older than the deployed archive keeps.
func (r *Replay) Reach() time.Duration {
	reach := r.now.Sub(r.From)
	if r.Retention > 0 {
		reach = min(reach, r.Retention)
	}
	return reach
}

// Safe refuses the replay when a consuming class could repeat its side effects:
// check.ReplaySafe, rule E013's reasoning, asked of the archive as deployed (which may keep
// events longer than the spec says, e.g. before the spec's retention was applied) and the
// replay's reach.
//
// A replay without a rule filter also reaches every rule whose target is outside the fleet
// (check.Redeliveries: tool.notify), which no idempotency table guards: it is refused too.
func (r *Replay) Safe() error {
	if len(r.ForeignRules) > 0 {
		return fmt.Errorf("refused (rule E013): a replay of every event reaches rules on bus %s that the fleet does not define (%s): their targets are outside the fleet and would receive each archived event again. "+
			"Replay only the events classes consume (--event): the replay then goes to their rules alone",
			r.Bus, strings.Join(r.ForeignRules, ", "))
	}
	if len(r.Redeliveries) > 0 {
		var to []string
		for _, rd := range r.Redeliveries {
			to = append(to, fmt.Sprintf("rule %s delivers %s's completion events (%s) to %s", rd.Rule, rd.Class.Name, strings.Join(rd.Events, ", "), rd.Target))
		}
		return fmt.Errorf("refused (rule E013): a replay of every event reaches rules whose targets are outside the fleet, and would deliver each archived event there again: %s. "+
			"Replay only the events classes consume (--event): the replay then goes to their rules alone",
			strings.Join(to, "; "))
	}
	var unsafe []string
	for _, a := range r.Consumers {
		if !check.ReplaySafe(a, r.Reach()) {
			unsafe = append(unsafe, fmt.Sprintf("%s (non_idempotent, remembers keys for %s)", a.Name, a.Idempotency.Window))
		}
	}
	if len(unsafe) == 0 {
		return nil
	}
	kept := "forever"
	if r.Retention > 0 {
		kept = "for " + r.Retention.String()
	}
	return fmt.Errorf("refused (rule E013): the archive keeps events %s and the replay reaches events %s old, older than the idempotency window of %s: "+
		"their keys are forgotten and the replay would repeat their side effects. Replay a later window (--from), or only events no such class consumes (--event)",
		kept, r.Reach().Round(time.Second), strings.Join(unsafe, ", "))
}

// ArchiveLag is how long after ingestion an event may still be missing from its archive:
// EventBridge archives events asynchronously, and its user guide ("Replaying archived events
// in Amazon EventBridge") advises waiting about 10 minutes after ingestion before replaying.
// A window ending more recently than this could silently leave out its newest events.
const ArchiveLag = 10 * time.Minute

// PlanReplay checks a replay against the fleet: an archive exists, the window is sane and
// already archived, the events are known and consumed. Resolve then reads the deployed archive and Safe checks the
// consumers against it.
func PlanReplay(f *ir.Fleet, from, to time.Time, events []string, now time.Time) (*Replay, error) {
	ar := f.Bus.Archive
	if ar == nil {
		return nil, fmt.Errorf("fleet %s has no archive (bus.archive): nothing to replay", f.Name)
	}
	switch {
	case from.IsZero() || to.IsZero():
		return nil, fmt.Errorf("a replay needs --from and --to")
	case !from.Before(to):
		return nil, fmt.Errorf("--from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case to.After(now):
		return nil, fmt.Errorf("--to %s is in the future: EventBridge replays only archived events", to.Format(time.RFC3339))
	case now.Sub(to) < ArchiveLag:
		return nil, fmt.Errorf("--to %s is less than %s ago: the archive may not hold those events yet (EventBridge archives lag ingestion); "+
			"end the window at %s or earlier (--to %dm), or wait and replay the rest later",
			to.UTC().Format(time.RFC3339), ArchiveLag, now.Add(-ArchiveLag).UTC().Format(time.RFC3339), int(ArchiveLag.Minutes()))
	}
	known := map[string]bool{}
	for _, e := range f.Events {
		known[e.DetailType] = true
	}
	for _, e := range events {
		if !known[e] {
			return nil, fmt.Errorf("unknown event %q (not in the fleet's events)", e)
		}
	}
	r := &Replay{Archive: ar.Name, Bus: f.Bus.Name, From: from, To: to, Events: events, RuleFilter: len(events) > 0, now: now}
	if !r.RuleFilter {
		r.Redeliveries = check.Redeliveries(f)
	}
	r.fleetRules = map[string]bool{}
	for _, a := range f.Agents {
		if a.Rule != nil {
			r.fleetRules[a.Rule.Name] = true
		}
	}
	for _, rd := range check.Redeliveries(f) {
		r.fleetRules[rd.Rule] = true
	}
	for _, a := range f.Agents {
		if a.Rule == nil || a.Consumes == nil || a.Consumes.Event == nil {
			continue
		}
		if len(events) == 0 || slices.Contains(events, a.Consumes.Event.DetailType) {
			r.Consumers = append(r.Consumers, a)
		}
	}
	if len(r.Consumers) == 0 {
		return nil, fmt.Errorf("no class consumes %s: the replay would deliver nothing", strings.Join(events, ", "))
	}
	return r, nil
}

// Resolve reads the archive's and the rules' ARNs.
func (r *Replay) Resolve(ctx context.Context, c *eventbridge.Client) error {
	out, err := c.DescribeArchive(ctx, &eventbridge.DescribeArchiveInput{ArchiveName: aws.String(r.Archive)})
	if err != nil {
		return fmt.Errorf("archive %s: %w", r.Archive, err)
	}
	r.ArchiveARN, r.BusARN = aws.ToString(out.ArchiveArn), aws.ToString(out.EventSourceArn)
	r.Retention = time.Duration(aws.ToInt32(out.RetentionDays)) * 24 * time.Hour
	if !r.RuleFilter {
		return r.findForeignRules(ctx, c)
	}
	r.RuleARNs = nil
	for _, a := range r.Consumers {
		rule, err := c.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(a.Rule.Name), EventBusName: aws.String(r.Bus)})
		if err != nil {
			return fmt.Errorf("rule %s of class %s: %w", a.Rule.Name, a.Name, err)
		}
		r.RuleARNs = append(r.RuleARNs, aws.ToString(rule.Arn))
	}
	return nil
}

// findForeignRules lists the bus's rules (ListRules) and keeps those the spec does not
// define; rules a service manages (ManagedBy, e.g. schema discovery) are left out.
func (r *Replay) findForeignRules(ctx context.Context, c *eventbridge.Client) error {
	r.ForeignRules = nil
	var token *string
	for {
		out, err := c.ListRules(ctx, &eventbridge.ListRulesInput{EventBusName: aws.String(r.Bus), NextToken: token})
		if err != nil {
			return fmt.Errorf("rules of bus %s: %w", r.Bus, err)
		}
		for _, rule := range out.Rules {
			if name := aws.ToString(rule.Name); !r.fleetRules[name] && aws.ToString(rule.ManagedBy) == "" {
				r.ForeignRules = append(r.ForeignRules, name)
			}
		}
		if token = out.NextToken; token == nil {
			slices.Sort(r.ForeignRules)
			return nil
		}
	}
}

// Name is a replay name unique to the second (EventBridge: 1-64 of [.-_A-Za-z0-9]).
func (r *Replay) Name(now time.Time) string {
	n := r.Archive + "-" + now.UTC().Format("20060102T150405Z")
	if len(n) > 64 {
		n = n[len(n)-64:]
	}
	return n
}

// Start asks EventBridge to replay (StartReplay) and returns the replay's state.
func (r *Replay) Start(ctx context.Context, c *eventbridge.Client, name string) (ebtypes.ReplayState, error) {
	dest := &ebtypes.ReplayDestination{Arn: aws.String(r.BusARN)}
	if r.RuleFilter {
		dest.FilterArns = r.RuleARNs
	}
	out, err := c.StartReplay(ctx, &eventbridge.StartReplayInput{
		ReplayName:     aws.String(name),
		Description:    aws.String(r.description()),
		EventSourceArn: aws.String(r.ArchiveARN),
		EventStartTime: aws.Time(r.From),
		EventEndTime:   aws.Time(r.To),
		Destination:    dest,
	})
	if err != nil {
		return "", fmt.Errorf("start replay: %w", err)
	}
	return out.State, nil
}

func (r *Replay) description() string {
	if len(r.Events) == 0 {
		return "fleetc replay: every event"
	}
	return "fleetc replay: " + strings.Join(r.Events, ", ")
}

// Progress is one DescribeReplay observation.
type Progress struct {
	State        ebtypes.ReplayState
	Reason       string
	LastReplayed time.Time // zero until the first event went out
}

// Percent is how far through the window the replay is.
func (p Progress) Percent(r *Replay) int {
	if p.State == ebtypes.ReplayStateCompleted {
		return 100
	}
	if p.LastReplayed.IsZero() {
		return 0
	}
	return int(math.Round(100 * p.LastReplayed.Sub(r.From).Seconds() / r.To.Sub(r.From).Seconds()))
}

// Terminal reports whether a replay in state s is over.
func Terminal(s ebtypes.ReplayState) bool {
	return s == ebtypes.ReplayStateCompleted || s == ebtypes.ReplayStateCancelled || s == ebtypes.ReplayStateFailed
}

// Wait polls DescribeReplay every interval, reporting each change, until the replay is
// COMPLETED, CANCELLED or FAILED (or ctx ends).
func Wait(ctx context.Context, c *eventbridge.Client, name string, interval time.Duration, report func(Progress)) (Progress, error) {
	var last Progress
	for {
		out, err := c.DescribeReplay(ctx, &eventbridge.DescribeReplayInput{ReplayName: aws.String(name)})
		if err != nil {
			return last, fmt.Errorf("describe replay %s: %w", name, err)
		}
		p := Progress{State: out.State, Reason: aws.ToString(out.StateReason), LastReplayed: aws.ToTime(out.EventLastReplayedTime)}
		if p != last {
			report(p)
			last = p
		}
		if Terminal(p.State) {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(interval):
		}
	}
}
