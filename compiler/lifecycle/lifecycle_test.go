package lifecycle

import "testing"

// TestTally: the counts above 0 in Actions' order, whatever the map's order; "" for none.
func TestTally(t *testing.T) {
	for want, n := range map[string]map[Action]int{
		"1 to create, 1 to update, 2 to replace, 1 to delete": {Delete: 1, Replace: 2, Update: 1, Create: 1},
		"3 to replace": {Replace: 3, Create: 0},
		"":             {},
	} {
		if got := Tally(n); got != want {
			t.Errorf("Tally(%v) = %q, want %q", n, got, want)
		}
	}
}
