package jsonptr

import "testing"

func TestRoundTrip(t *testing.T) {
	for raw, esc := range map[string]string{"": "", "a": "a", "a/b": "a~1b", "m~n": "m~0n", "~1": "~01", "/~": "~1~0", "~/": "~0~1"} {
		if got := Escape(raw); got != esc {
			t.Errorf("Escape(%q) = %q, want %q", raw, got, esc)
		}
		if got := Unescape(esc); got != raw {
			t.Errorf("Unescape(%q) = %q, want %q", esc, got, raw)
		}
	}
	if got := Join("agents", "a/b", "x~y"); got != "/agents/a~1b/x~0y" {
		t.Errorf("Join = %q", got)
	}
	if got := Join(); got != "" {
		t.Errorf("Join() = %q", got)
	}
	if got := Last("/agents/a~1b"); got != "a/b" {
		t.Errorf("Last = %q", got)
	}
}
