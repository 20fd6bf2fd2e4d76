package idem

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func store(t *testing.T) (*Dynamo, *clock) {
	cfg := kumotest.Require(t)
	clk := &clock{t: time.Now()}
	return &Dynamo{API: kumotest.DynamoDB(cfg), Table: kumotest.Table(t, cfg, "idem"), Class: "researcher", Window: time.Hour, Now: clk.Now}, clk
}

func TestLifecycle(t *testing.T) {
	d, clk := store(t)
	ctx := context.Background()
	c1, err := d.Acquire(ctx, "trace-1", 10*time.Second)
	if err != nil || c1.State != Acquired || c1.Owner == "" {
		t.Fatalf("first acquire: %+v %v", c1, err)
	}
	c2, err := d.Acquire(ctx, "trace-1", 10*time.Second)
	if err != nil || c2.State != Busy || c2.LeaseUntil.Before(clk.Now().Add(9*time.Second)) {
		t.Fatalf("second acquire: %+v %v", c2, err)
	}
	if err := d.Extend(ctx, "trace-1", c1.Owner, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.Extend(ctx, "trace-1", "someone-else", 10*time.Second); !errors.Is(err, ErrLost) {
		t.Fatalf("foreign extend: %v", err)
	}
	if err := d.Complete(ctx, "trace-1", c1.Owner, json.RawMessage(`{"answer":42}`), false, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Completed but still publishing: duplicates wait for the publisher.
	c3, err := d.Acquire(ctx, "trace-1", 10*time.Second)
	if err != nil || c3.State != Busy {
		t.Fatalf("while publishing: %+v %v", c3, err)
	}
	if err := d.MarkPublished(ctx, "trace-1"); err != nil {
		t.Fatal(err)
	}
	c4, _ := d.Acquire(ctx, "trace-1", 10*time.Second)
	if c4.State != Done || !c4.Published {
		t.Fatalf("published not recorded: %+v", c4)
	}
	// Past the window the record no longer answers (TTL deletion lags).
	clk.Add(2 * time.Hour)
	c5, err := d.Acquire(ctx, "trace-1", 10*time.Second)
	if err != nil || c5.State != Acquired {
		t.Fatalf("after window: %+v %v", c5, err)
	}
	// The class is part of the key: another class's record is separate.
	other := *d
	other.Class = "coder"
	if c, err := other.Acquire(ctx, "trace-1", time.Second); err != nil || c.State != Acquired {
		t.Fatalf("other class: %+v %v", c, err)
	}
}

func TestExpiredLeaseReclaimedOnce(t *testing.T) {
	d, clk := store(t)
	ctx := context.Background()
	dead, _ := d.Acquire(ctx, "k", 5*time.Second)
	if dead.State != Acquired {
		t.Fatal(dead)
	}
	clk.Add(7 * time.Second) // the holder died; its lease ended
	var wins atomic.Int32
	var owners sync.Map
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.Acquire(ctx, "k", 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			if c.State == Acquired {
				wins.Add(1)
				owners.Store(c.Owner, true)
			} else if c.State != Busy {
				t.Errorf("state %v", c.State)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d reclaimers won, want exactly 1", wins.Load())
	}
	// The dead holder's late completion must not overwrite the new owner's work.
	if err := d.Complete(ctx, "k", dead.Owner, json.RawMessage(`1`), true, time.Second); !errors.Is(err, ErrLost) {
		t.Fatalf("stale owner completed: %v", err)
	}
}

// A publisher that died between storing the result and publishing: after
// its lease, exactly one duplicate takes over publishing; the others wait.
func TestUnpublishedResultRepublishedOnce(t *testing.T) {
	d, clk := store(t)
	ctx := context.Background()
	c, _ := d.Acquire(ctx, "k", 5*time.Second)
	if err := d.Complete(ctx, "k", c.Owner, json.RawMessage(`{"r":1}`), false, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Add(7 * time.Second)
	var publishers, busy atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.Acquire(ctx, "k", 5*time.Second)
			switch {
			case err != nil:
				t.Error(err)
			case c.State == Done && !c.Published && c.Owner != "" && string(c.Result) == `{"r":1}`:
				publishers.Add(1)
			case c.State == Busy:
				busy.Add(1)
			default:
				t.Errorf("unexpected claim %+v", c)
			}
		}()
	}
	wg.Wait()
	if publishers.Load() != 1 || busy.Load() != 11 {
		t.Fatalf("publishers=%d busy=%d, want 1 and 11", publishers.Load(), busy.Load())
	}
	if err := d.MarkPublished(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if c, _ := d.Acquire(ctx, "k", time.Second); c.State != Done || !c.Published {
		t.Fatalf("after publish: %+v", c)
	}
}

func TestAbandonLetsNextAttemptRun(t *testing.T) {
	d, _ := store(t)
	ctx := context.Background()
	c, _ := d.Acquire(ctx, "k", time.Minute)
	if err := d.Abandon(ctx, "k", "not-me"); !errors.Is(err, ErrLost) {
		t.Fatalf("foreign abandon: %v", err)
	}
	if err := d.Abandon(ctx, "k", c.Owner); err != nil {
		t.Fatal(err)
	}
	if c2, err := d.Acquire(ctx, "k", time.Minute); err != nil || c2.State != Acquired {
		t.Fatalf("after abandon: %+v %v", c2, err)
	}
}

func TestResultTooLarge(t *testing.T) {
	d := &Dynamo{}
	big := json.RawMessage(`"` + strings.Repeat("x", MaxResultBytes) + `"`)
	if err := d.Complete(context.Background(), "k", "o", big, true, time.Second); !errors.Is(err, ErrResultTooLarge) {
		t.Fatal(err)
	}
}

func TestKey(t *testing.T) {
	detail := json.RawMessage(`{"trace_id":"t-1","step":3,"conversation_id":"c/9","empty":""}`)
	cases := []struct {
		fields   []string
		fallback string
		want     string
		err      bool
	}{
		{nil, "evt-1", "evt-1", false},
		{nil, "", "", true},
		{[]string{"trace_id"}, "evt-1", "t-1", false},
		{[]string{"trace_id", "step"}, "", `["t-1","3"]`, false},
		{[]string{"conversation_id", "step"}, "", `["c/9","3"]`, false},
		{[]string{"missing"}, "evt", "", true},
		{[]string{"empty"}, "evt", "", true},
	}
	for _, c := range cases {
		got, err := Key(detail, c.fields, c.fallback)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%v: %q %v", c.fields, got, err)
		}
	}
	long := json.RawMessage(`{"a":"` + strings.Repeat("y", 600) + `","b":"z"}`)
	if k, err := Key(long, []string{"a", "b"}, ""); err != nil || !strings.HasPrefix(k, "sha256:") {
		t.Errorf("long key: %q %v", k, err)
	}
}

// A step that runs past the idempotency window keeps its record: Extend
// moves expires_at with the lease, so a duplicate finds it busy instead of
// treating the running record as expired and running the work again.
func TestExtendKeepsLongStepPastWindow(t *testing.T) {
	d, clk := store(t)
	d.Window = 10 * time.Second
	ctx := context.Background()
	lease := 30 * time.Second
	c1, err := d.Acquire(ctx, "long-1", lease)
	if err != nil || c1.State != Acquired {
		t.Fatalf("acquire: %+v %v", c1, err)
	}
	// Even before any heartbeat the lease outlives a shorter window.
	clk.Add(15 * time.Second)
	if c, err := d.Acquire(ctx, "long-1", lease); err != nil || c.State != Busy {
		t.Fatalf("within the first lease, past the window: %+v %v", c, err)
	}
	clk.Add(10 * time.Second) // t+25s: heartbeat
	if err := d.Extend(ctx, "long-1", c1.Owner, lease); err != nil {
		t.Fatal(err)
	}
	clk.Add(15 * time.Second) // t+40s: first lease and window long gone
	if c, err := d.Acquire(ctx, "long-1", lease); err != nil || c.State != Busy {
		t.Fatalf("extended step stolen mid-run: %+v %v", c, err)
	}
	if err := d.Complete(ctx, "long-1", c1.Owner, json.RawMessage(`1`), true, lease); err != nil {
		t.Fatalf("owner lost the work: %v", err)
	}
}
