package jobs

import (
	"testing"
	"time"
)

// TestOwnerKeyIsUnambiguous: no two (principal, session) pairs share an index key, even when
// the separator appears inside a principal.
func TestOwnerKeyIsUnambiguous(t *testing.T) {
	pairs := [][2]string{{"a#b", "c"}, {"a", "b#c"}, {"a", "#b#c"}, {"", "a#b#c"}, {"3:a", "b"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := OwnerKey(p[0], p[1])
		if q, dup := seen[k]; dup {
			t.Errorf("OwnerKey%v == OwnerKey%v == %q", p, q, k)
		}
		seen[k] = p
		if k[:len(OwnerPrefix)] != OwnerPrefix {
			t.Errorf("%q does not start with %s (the tools role's LeadingKeys condition)", k, OwnerPrefix)
		}
	}
}

// TestTimeSortsAsText: the index sorts createdAt as a string, so later must sort after.
func TestTimeSortsAsText(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 59, 59, 990_000_000, time.UTC)
	prev := FormatTime(t0)
	for _, d := range []time.Duration{time.Millisecond, 10 * time.Millisecond, time.Second, time.Hour} {
		next := FormatTime(t0.Add(d))
		if !(prev < next) || len(prev) != len(next) {
			t.Errorf("%q then %q: not sortable as text", prev, next)
		}
		prev = next
	}
}

func TestFinished(t *testing.T) {
	for _, s := range Statuses {
		if want := s == Succeeded || s == Failed; s.Finished() != want {
			t.Errorf("%s.Finished() = %v", s, !want)
		}
	}
	if Status("DONE").Valid() {
		t.Error("DONE is valid")
	}
}

// TestOwnerKeyPrefix: a principal's keys, in any session, start with its prefix; no other
// principal's do, even one that extends it ("class:a" vs "class:ab").
func TestOwnerKeyPrefix(t *testing.T) {
	p := OwnerKeyPrefix(ClassPrincipal("a"))
	if p != "OWNER#7:class:a#" {
		t.Errorf("OwnerKeyPrefix(class:a) = %q", p)
	}
	for _, s := range []string{"", "conv-1", "a#b"} {
		if k := OwnerKey(ClassPrincipal("a"), s); k[:len(p)] != p {
			t.Errorf("OwnerKey(class:a, %q) = %q does not start with %q", s, k, p)
		}
		if k := OwnerKey(ClassPrincipal("ab"), s); len(k) >= len(p) && k[:len(p)] == p {
			t.Errorf("OwnerKey(class:ab, %q) = %q starts with class:a's prefix", s, k)
		}
	}
}
