package router

import (
	"encoding/json"
	"testing"
)

// A whole answer of two text blocks replays as a stream whose logprobs appear once, on the
// first text delta: they describe the whole answer, and a client that appends each delta's
// logprobs (the OpenAI SDKs do) would otherwise count every token twice.
func TestReplayCarriesLogprobsOnce(t *testing.T) {
	lp := json.RawMessage(`{"content":[{"token":"a","logprob":-0.1}]}`)
	resp := &Response{Model: "m", StopReason: StopEndTurn, Logprobs: lp,
		Message: Message{Role: RoleAssistant, Content: []Block{{Text: "first"}, {Text: "second"}}}}
	var with, texts int
	for _, ev := range replay(resp) {
		if ev.Kind != EventBlockDelta || ev.Text == "" {
			continue
		}
		texts++
		if ev.Logprobs != nil {
			with++
			if texts != 1 {
				t.Errorf("logprobs on text delta %d, want them on the first only", texts)
			}
		}
	}
	if texts != 2 || with != 1 {
		t.Fatalf("%d text deltas, %d with logprobs; want 2 and 1", texts, with)
	}
}
