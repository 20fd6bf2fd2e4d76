package ir

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Each bound of a cron field, rate and the flexible window: the value at the bound passes,
// one unit past it is refused.
func TestCronBounds(t *testing.T) {
	for _, c := range []struct {
		expr string
		ok   bool
	}{
		{"0 0 ? * * *", true}, {"59 23 ? * * *", true}, {"60 0 ? * * *", false}, {"0 24 ? * * *", false},
		{"0 0 1 * ? *", true}, {"0 0 31 * ? *", true}, {"0 0 0 * ? *", false}, {"0 0 32 * ? *", false},
		{"0 0 ? 1 * *", true}, {"0 0 ? 12 * *", true}, {"0 0 ? 0 * *", false}, {"0 0 ? 13 * *", false},
		{"0 0 ? * 1 *", true}, {"0 0 ? * 7 *", true}, {"0 0 ? * 0 *", false}, {"0 0 ? * 8 *", false},
		{"0 0 ? * * 1970", true}, {"0 0 ? * * 2199", true}, {"0 0 ? * * 1969", false}, {"0 0 ? * * 2200", false},
		{"0/59 0 ? * * *", true}, {"0/60 0 ? * * *", false}, {"0/0 0 ? * * *", false},
		{"30 7 ? * MON-FRI *", true}, {"30 7 ? JAN-DEC MON-SUN *", true}, {"0 0 ? * MON-FUN *", false}, {"0 0 ? * MON,WED *", true},
		{"0 0 L * ? *", true}, {"0 0 15W * ? *", true}, {"0 0 ? * 6#3 *", true}, {"0 0 ? * 6#6 *", false}, {"0 0 ? * FRIL *", true},
		{"0 0 ? ? * *", false}, {"0 0 * * * *", false}, {"0 0 ? * ? *", false}, {"0 0 ? * *", false}, {"0 0 ? * * * *", false},
	} {
		if err := CheckCron(c.expr); (err == nil) != c.ok {
			t.Errorf("CheckCron(%q) = %v, want ok=%v", c.expr, err, c.ok)
		}
	}
}

func TestRateBounds(t *testing.T) {
	for _, c := range []struct {
		expr string
		ok   bool
	}{
		{"1 minute", true}, {"0 minutes", false}, {"2 minutes", true}, {"1 minutes", false}, {"2 minute", false},
		{"1 hour", true}, {"12 hours", true}, {"1 day", true}, {"7 days", true}, {"1 week", false}, {"-1 days", false}, {"five minutes", false},
	} {
		if err := CheckRate(c.expr); (err == nil) != c.ok {
			t.Errorf("CheckRate(%q) = %v, want ok=%v", c.expr, err, c.ok)
		}
	}
}

// TestFlexibleWindowBounds lowers a schedule with each window: 1m and 1440m pass, one minute
// (or one second) outside fails.
func TestFlexibleWindowBounds(t *testing.T) {
	for _, c := range []struct {
		window string
		ok     bool
	}{{"0m", false}, {"1m", true}, {"1440m", true}, {"1441m", false}, {"61s", false}} {
		src := strings.Replace(scheduleSrc, "WINDOW", c.window, 1)
		f, ds := lowerString(t, src)
		if got := len(f.Schedules) == 1 && !ds.HasErrors(); got != c.ok {
			t.Errorf("flexible_window %s: lowered=%v (%v), want %v", c.window, got, ds, c.ok)
		}
	}
}

const scheduleSrc = `version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
events:
  tick: { version: 1, source: fx.clock, detail: { type: object } }
agents:
  a: { runtime: lambda, consumes: { event: tick }, step: { p95: 1s, max: 30s }, handler: { exec: [/a] } }
schedules:
  s: { rate: "5 minutes", event: tick, flexible_window: WINDOW }
`

func lowerString(t *testing.T, src string) (*Fleet, diag.Diagnostics) {
	t.Helper()
	file, ds := spec.Load("fleet.yaml", []byte(src))
	if file == nil || ds.HasErrors() {
		t.Fatalf("load: %v", ds)
	}
	return Lower(file)
}

// TestTimezone: an IANA zone passes, anything else is an error (not a warning).
func TestTimezone(t *testing.T) {
	for _, c := range []struct {
		zone string
		ok   bool
	}{{"Europe/Paris", true}, {"America/New_York", true}, {"UTC", true}, {"Mars/Olympus", false}, {"Local", false}} {
		src := strings.Replace(strings.Replace(scheduleSrc, ", flexible_window: WINDOW", ", timezone: "+c.zone, 1), "WINDOW", "", 1)
		f, ds := lowerString(t, src)
		if got := len(f.Schedules) == 1 && !ds.HasErrors(); got != c.ok || ds.HasErrors() == c.ok {
			t.Errorf("timezone %s: lowered=%v (%v), want %v", c.zone, got, ds, c.ok)
		}
	}
}
