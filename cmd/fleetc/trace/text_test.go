package trace

import (
	"strings"
	"testing"
	"time"
)

// A record's key, a dead letter's message and an execution's cause are the producers' and the
// handlers' text: the timeline shows each entry on its own line with no terminal control.
func TestTextEntriesStayOnTheirLine(t *testing.T) {
	tl := &Timeline{TraceID: "t1", Since: time.Unix(0, 0), Entries: []Entry{{
		Time: time.Unix(1, 0), Where: "solver", What: "BadOutput", ID: "key\nforged entry",
		Detail: "cause \x1b[2Jcleared\r\nnote: forged"}}}
	var b strings.Builder
	tl.WriteText(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || strings.ContainsRune(b.String(), '\x1b') {
		t.Errorf("timeline:\n%q", b.String())
	}
}
