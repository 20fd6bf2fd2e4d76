package dlq_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/runtime/wire"
)

func TestGroupByCode(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	long := strings.Repeat("é", 400) // 800 bytes: the sample is cut on a rune boundary
	letters := []dlq.Letter{
		{ID: "a", Code: wire.Timeout, SentAt: t0.Add(2 * time.Minute), Body: "a"},
		{ID: "b", Code: wire.BadOutput, SentAt: t0.Add(time.Minute), Body: "b", Message: "first", Attempts: 1},
		{ID: "c", Code: wire.BadOutput, SentAt: t0, Body: "c"},
		{ID: "d", Code: wire.BadOutput, SentAt: t0.Add(3 * time.Minute), Body: long, Message: "latest", Attempts: 3},
		{ID: "e", Code: wire.Busy, SentAt: t0, Body: "e"},
	}
	gs := dlq.GroupByCode(letters)
	if len(gs) != 3 || gs[0].Code != wire.BadOutput || gs[1].Code != wire.Busy || gs[2].Code != wire.Timeout {
		t.Fatalf("order (largest first, then by code): %+v", gs)
	}
	g := gs[0]
	if g.Count != 3 || !g.FirstSeen.Equal(t0) || !g.LastSeen.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("BadOutput: %+v", g)
	}
	s := g.Sample
	if s.MessageID != "d" || s.Message != "latest" || s.Attempts != 3 || !s.Truncated || len(s.Body) != 512 || !strings.HasPrefix(long, s.Body) {
		t.Errorf("sample is the latest letter, cut to 512 bytes: %+v (%d bytes)", s, len(s.Body))
	}
	if got := dlq.Codes(gs); got != "BadOutput (3), Busy (1), Timeout (1)" {
		t.Errorf("Codes: %q", got)
	}
}

// TestGroupSampleTieIsDeterministic: two letters sent in the same millisecond (SQS's
// SentTimestamp resolution) give the same sample whichever order the peek received them in.
func TestGroupSampleTieIsDeterministic(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 36, 45, 536e6, time.UTC)
	a := dlq.Letter{ID: "1f40", Code: wire.MalformedMessage, SentAt: t0, Body: "not json at all"}
	b := dlq.Letter{ID: "0b96", Code: wire.MalformedMessage, SentAt: t0, Body: "{truncated"}
	for _, order := range [][]dlq.Letter{{a, b}, {b, a}} {
		gs := dlq.GroupByCode(order)
		if len(gs) != 1 || gs[0].Count != 2 || gs[0].Sample.Body != "{truncated" || !gs[0].LastSeen.Equal(t0) {
			t.Errorf("letters %s, %s: %+v", order[0].ID, order[1].ID, gs)
		}
	}
	same := b
	same.ID = "ffff" // identical bodies: the id decides
	for _, order := range [][]dlq.Letter{{b, same}, {same, b}} {
		if gs := dlq.GroupByCode(order); gs[0].Sample.MessageID != "ffff" {
			t.Errorf("letters %s, %s: sample %s", order[0].ID, order[1].ID, gs[0].Sample.MessageID)
		}
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{42 * time.Second: "42s", 3 * time.Minute: "3m", 5 * time.Hour: "5h", 50 * time.Hour: "2d"} {
		if got := dlq.Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}
