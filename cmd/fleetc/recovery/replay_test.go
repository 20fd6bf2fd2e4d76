package recovery

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// A replay of every event reaches each tool.notify rule, which pushes the archived
// completions to a target outside the fleet (an API destination, a client's queue) with no
// idempotency table in between: Safe refuses it, naming the rules and targets. The same
// window with --event goes only to the consuming classes' rules (FilterArns), and is safe.
func TestReplayReachingNotifyRulesIsRefused(t *testing.T) {
	f := irtest.Load(t, "../../../compiler/terraform/testdata/tools-notify/fleet.yaml")
	f.Bus.Archive = &ir.Archive{Name: "notify-archive", Retention: 24 * time.Hour, Path: "/bus/archive"}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	from, to := now.Add(-2*time.Hour), now.Add(-time.Hour)

	every, err := PlanReplay(f, from, to, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	err = every.Safe()
	for _, want := range []string{"refused (rule E013)",
		"rule notify-reindex-notify delivers reindex's completion events (ReindexCompleted) to API destination arn:aws:events:eu-west-1:111122223333:api-destination/client-hook/0a1b2c3d",
		"rule notify-build-notify delivers build's completion events (BuildCompleted) to queue notify-build-completions",
		"(--event)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a replay of every event: %v\nwant it to say %q", err, want)
		}
	}

	filtered, err := PlanReplay(f, from, to, []string{"ReindexRequested", "BuildRequested"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := filtered.Safe(); err != nil || !filtered.RuleFilter || len(filtered.Redeliveries) != 0 {
		t.Errorf("a replay to the consumers' rules only: %v (rule filter %v, %d redeliveries)", err, filtered.RuleFilter, len(filtered.Redeliveries))
	}
}

// The archive lags ingestion: a window ending less than ArchiveLag ago may miss its newest
// events, so it is refused with the latest --to that is safe; one ending exactly then is
// planned. One second either side of the bound.
func TestReplayWaitsForTheArchiveLag(t *testing.T) {
	f := irtest.Load(t, "../../../compiler/terraform/testdata/tools-notify/fleet.yaml")
	f.Bus.Archive = &ir.Archive{Name: "notify-archive", Retention: 24 * time.Hour, Path: "/bus/archive"}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	events := []string{"ReindexRequested"}
	_, err := PlanReplay(f, now.Add(-time.Hour), now.Add(-ArchiveLag+time.Second), events, now)
	for _, want := range []string{"less than 10m0s ago", "the archive may not hold those events yet", "end the window at 2026-12-01T11:50:00Z or earlier (--to 10m)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a window ending 9m59s ago: %v\nwant it to say %q", err, want)
		}
	}
	if _, err := PlanReplay(f, now.Add(-time.Hour), now.Add(-ArchiveLag), events, now); err != nil {
		t.Errorf("a window ending exactly %s ago is archived: %v", ArchiveLag, err)
	}
}
