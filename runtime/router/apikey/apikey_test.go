package apikey

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// store is a key store whose reads can be counted and held.
type store struct {
	mu    sync.Mutex
	key   string
	reads atomic.Int32
	delay time.Duration
}

func (s *store) fetch(context.Context) (string, error) {
	s.reads.Add(1)
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key, nil
}

func (s *store) set(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = k
}

// Twenty requests refused the same key at once cost one read, and all of them get the
// rotated key; once the new key is refused too and the store still holds it, further 401s
// do not read again until RefetchAfter has passed.
func TestRejectedReadsOncePerBurst(t *testing.T) {
	st := &store{key: "sk-old", delay: 20 * time.Millisecond}
	now := time.Unix(1000, 0)
	src, err := New(context.Background(), st.fetch)
	if err != nil {
		t.Fatal(err)
	}
	src.now = func() time.Time { return now }
	st.set("sk-new")
	var wg sync.WaitGroup
	var changed atomic.Int32
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, ch, err := src.Rejected(context.Background(), "sk-old")
			if err != nil || k != "sk-new" {
				t.Errorf("Rejected = %q, %v", k, err)
			}
			if ch {
				changed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := st.reads.Load(); n != 2 {
		t.Fatalf("%d reads (start + burst), want 2", n)
	}
	if changed.Load() != 20 || src.Key() != "sk-new" {
		t.Fatalf("%d of 20 requests were told to retry; key %q", changed.Load(), src.Key())
	}

	// The new key is refused while the store still holds it (revoked, not rotated).
	for range 5 {
		if _, ch, _ := src.Rejected(context.Background(), "sk-new"); ch {
			t.Fatal("a retry with the key that was just refused")
		}
	}
	if n := st.reads.Load(); n != 3 {
		t.Fatalf("%d reads after 5 refusals of an unrotated key, want 3", n)
	}
	now = now.Add(RefetchAfter)
	st.set("sk-newer")
	if k, ch, _ := src.Rejected(context.Background(), "sk-new"); !ch || k != "sk-newer" || st.reads.Load() != 4 {
		t.Fatalf("after RefetchAfter: %q %v, %d reads", k, ch, st.reads.Load())
	}
}

// json_key picks a field of a JSON secret; no error quotes the secret's content.
func TestPickNeverQuotesTheValue(t *testing.T) {
	if k, err := pick("secret s", `{"api_key":" sk-in-json ","org":"o"}`, "api_key"); err != nil || k != "sk-in-json" {
		t.Fatalf("pick = %q, %v", k, err)
	}
	if k, err := pick("secret s", "sk-plain\n", ""); err != nil || k != "sk-plain" {
		t.Fatalf("pick = %q, %v", k, err)
	}
	for _, c := range []struct{ value, jsonKey, want string }{
		{"sk-not-json-9876", "api_key", "not a JSON object"},
		{`{"other":"sk-elsewhere-9876"}`, "api_key", "no such string field"},
		{`{"api_key":9876}`, "api_key", "no such string field"},
		{"   ", "", "empty key"},
	} {
		_, err := pick("secret s", c.value, c.jsonKey)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "9876") {
			t.Errorf("pick(%q, %q) error %v, want %q without the value", c.value, c.jsonKey, err, c.want)
		}
	}
}

func TestRegion(t *testing.T) {
	for ref, want := range map[string]string{
		"arn:aws:secretsmanager:eu-west-1:111122223333:secret:k-AbCdEf": "eu-west-1",
		"arn:aws:ssm:us-west-2:111122223333:parameter/fleet/k":          "us-west-2",
		"fleet/openai": "", "/fleet/k": "",
	} {
		if got := Region(ref); got != want {
			t.Errorf("Region(%q) = %q, want %q", ref, got, want)
		}
	}
}

// A re-read that failed (the store unreachable) is not "the key is unchanged": every 401 until
// the next read (RefetchAfter later, still one read per burst) gets that failure, so the
// caller can treat the refusal as transient instead of final.
func TestRejectedAfterFailedReadReportsIt(t *testing.T) {
	fail := false
	now := time.Unix(1000, 0)
	src, _ := New(context.Background(), func(context.Context) (string, error) {
		if fail {
			return "", errors.New("store unreachable")
		}
		return "sk-old", nil
	})
	src.now = func() time.Time { return now }
	fail = true
	if _, changed, err := src.Rejected(context.Background(), "sk-old"); err == nil || changed {
		t.Fatalf("first 401, failing read: changed=%t err=%v, want the read's error", changed, err)
	}
	now = now.Add(RefetchAfter / 2)
	if _, changed, err := src.Rejected(context.Background(), "sk-old"); err == nil || changed {
		t.Errorf("401 inside RefetchAfter after a failed read: changed=%t err=%v, want that failure again", changed, err)
	}
	fail = false
	now = now.Add(RefetchAfter)
	if _, _, err := src.Rejected(context.Background(), "sk-old"); err != nil {
		t.Errorf("401 after RefetchAfter with the store back: %v", err)
	}
}

// A key read after a 401 that hangs (the store slow to answer) holds up neither the other
// requests' Key() (they send the cached key: most are not refused) nor a refused request
// whose own context ends while it waits for that read.
func TestSlowReadBlocksNoOne(t *testing.T) {
	release := make(chan struct{})
	first := true
	src, _ := New(context.Background(), func(ctx context.Context) (string, error) {
		if first {
			first = false
			return "sk-old", nil
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "sk-new", nil
	})
	reading := make(chan struct{})
	go func() {
		close(reading)
		src.Rejected(context.Background(), "sk-old")
	}()
	<-reading
	time.Sleep(50 * time.Millisecond) // the read has begun
	got := make(chan string, 1)
	go func() { got <- src.Key() }()
	select {
	case k := <-got:
		if k != "sk-old" {
			t.Errorf("Key() during the read = %q, want the cached key", k)
		}
	case <-time.After(time.Second):
		t.Error("Key() blocked behind a key read in progress")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, _, err := src.Rejected(ctx, "sk-old"); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a refused request whose context ended while waiting for the read got no error")
		}
	case <-time.After(time.Second):
		t.Error("a refused request waited for the read past its own context")
	}
	close(release)
}
