package compiler

import "testing"

// TestPostponedNoteNamesWhatWaits holds the P010 note's detail to the parts it postpones: a
// fleet-level error postpones no part, and the note must not name an empty list.
func TestPostponedNoteNamesWhatWaits(t *testing.T) {
	for _, tc := range []struct {
		skip map[string]bool
		want string
	}{
		{nil, "Nothing else was checked: references, rules and generation need a spec whose syntax and structure are valid."},
		{map[string]bool{}, "Every part was checked. Fleet-wide rules and generation run once the errors are fixed."},
		{map[string]bool{"/agents/b": true, "/agents/a": true}, "Every other part was checked. Rules that involve agents.a, agents.b, fleet-wide rules and generation run once the errors are fixed."},
	} {
		if got := postponed(nil, tc.skip).Detail; got != tc.want {
			t.Errorf("skip %v: detail\n%s\nwant\n%s", tc.skip, got, tc.want)
		}
	}
}
