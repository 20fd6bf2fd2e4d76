package check

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// notifyFleet has two async classes whose tool.notify rules push their completion events out
// of the fleet: reindex to an API destination, build to a queue a client reads.
const notifyFleet = "../terraform/testdata/tools-notify/fleet.yaml"

// An archive beside a tool.notify rule is E013: a replay of the archive re-delivers every
// archived completion to the client, and no idempotency table stands in between. Without
// the archive there is nothing to replay.
func TestE013ArchiveBesideNotifyRules(t *testing.T) {
	f := irtest.Load(t, notifyFleet)
	expectNone(t, f, "E013")
	f.Bus.Archive = &ir.Archive{Name: "notify-archive", Retention: time.Hour, Path: "/bus/archive"}
	want := map[string]string{
		"/agents/reindex/tool/notify": "the archive keeps reindex's completion events (ReindexCompleted), and its tool.notify rule notify-reindex-notify delivers them to API destination arn:aws:events:eu-west-1:111122223333:api-destination/client-hook/0a1b2c3d outside the fleet: a replay re-delivers every one",
		"/agents/build/tool/notify":   "the archive keeps build's completion events (BuildCompleted), and its tool.notify rule notify-build-notify delivers them to queue notify-build-completions, read by a client outside the fleet: a replay re-delivers every one",
	}
	got := map[string]string{}
	for _, d := range findings(f, "E013") {
		got[d.Path] = d.Summary
		if !strings.Contains(d.Detail, "Drop bus.archive") {
			t.Errorf("E013 at %s says no fix: %q", d.Path, d.Detail)
		}
	}
	if len(got) != len(want) {
		t.Errorf("E013 findings %v, want %v", got, want)
	}
	for path, summary := range want {
		if got[path] != summary {
			t.Errorf("E013 at %s:\n got %q\nwant %q", path, got[path], summary)
		}
	}
}

// The rule names Redeliveries reports are the ones the generated rules carry (ir.Notify.Rule,
// which compiler/terraform names the aws_cloudwatch_event_rule with).
func TestRedeliveriesNameTheNotifyRules(t *testing.T) {
	f := irtest.Load(t, notifyFleet)
	var rules []string
	for _, rd := range Redeliveries(f) {
		rules = append(rules, rd.Rule+" "+strings.Join(rd.Events, ","))
	}
	if got, want := strings.Join(rules, "; "), "notify-build-notify BuildCompleted; notify-reindex-notify ReindexCompleted"; got != want {
		t.Errorf("Redeliveries: %s, want %s", got, want)
	}
}
