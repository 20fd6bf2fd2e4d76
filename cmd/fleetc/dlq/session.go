package dlq

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// AttrRedrive is the message attribute fleetc sets on every copy it sends back to a class
// queue: "<session id>/<dead letter's message id>".
//
// Why an attribute: a dead letter's message id is new on every trip through the class queue
// (the worker sends a new message to the DLQ), so a redrive that tracked letters by id moved a
// message that fails fast again and again ("moved 186/1"). The worker's SendToDLQ keeps the
// producer's attributes next to its diagnosis, so the stamp comes back on the new dead
// letter and says exactly which letter of which invocation it is: the invocation does not
// move it again and counts it as failed again. It is compared as a whole, so a stamp of an
// earlier invocation is an ordinary letter to move (and is restamped). A body hash alone
// could not tell a letter coming back from a distinct letter with the same bytes.
//
// The worker keeps at most 10 attributes (its 3 diagnosis first, then traceparent, then by
// name, where this upper-case name sorts early), so a producer with 6 more attributes that
// sort before it crowds the stamp out. The session also remembers the SHA-256 of every body it moved:
// an unstamped letter with one of those bodies is not moved again in this invocation either
// (counted as left). Either way each dead letter moves at most once per invocation, and a
// redrive ends once a receive from the DLQ offers nothing it has not seen.
const AttrRedrive = "FLEETC_REDRIVE"

// DefaultSettle is how long a redrive keeps watching the DLQ after its last move before it
// reports: a letter that fails fast (malformed, a handler bug that answers at once) is back
// within a receive or two. One that fails slowly is the canary's business (--canary).
const DefaultSettle = 5 * time.Second

// Session is one redrive invocation, across its canary and the rest: which dead letters it
// moved and which of them came back to the DLQ.
type Session struct {
	ID     string
	moved  map[string]bool   // stamps of the letters moved
	bodies map[[32]byte]bool // SHA-256 of their bodies
	back   map[string]Letter // stamp → the letter back in the DLQ
	last   time.Time         // the last move
}

// NewSession starts an invocation with a random id.
func NewSession() *Session {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Session{ID: hex.EncodeToString(b[:]), moved: map[string]bool{}, bodies: map[[32]byte]bool{}, back: map[string]Letter{}}
}

// origin is what a letter received from the DLQ is to a session.
type origin int

const (
	fresh origin = iota // not moved in this session: move it
	back                // a copy this session sent, dead-lettered again
	twin                // unstamped, with the body of a letter moved: not moved again
)

// stamp is the AttrRedrive value of l's copy.
func (s *Session) stamp(l Letter) string { return s.ID + "/" + l.ID }

// stampOf is l's AttrRedrive value ("" when it has none).
func stampOf(l Letter) string {
	if v, ok := l.Attributes[AttrRedrive]; ok {
		return aws.ToString(v.StringValue)
	}
	return ""
}

// classify says what l is to s, recording a letter that came back.
func (s *Session) classify(l Letter) origin {
	if st := stampOf(l); s.moved[st] {
		if _, ok := s.back[st]; !ok {
			s.back[st] = l
		}
		return back
	}
	if s.bodies[sha256.Sum256([]byte(l.Body))] {
		return twin
	}
	return fresh
}

// record notes l as moved.
func (s *Session) record(l Letter, at time.Time) {
	s.moved[s.stamp(l)] = true
	s.bodies[sha256.Sum256([]byte(l.Body))] = true
	s.last = at
}

// stampAttr is the attribute put on l's copy.
func (s *Session) stampAttr(l Letter) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s.stamp(l))}
}

// Result is what one redrive invocation did to a class's DLQ.
type Result struct {
	// Moved dead letters were sent back to the class queue, each once.
	Moved int `json:"moved"`
	// FailedAgain of them came back to the DLQ during the invocation.
	FailedAgain int `json:"failed_again"`
	// Left is what else the DLQ holds at the end: letters not moved (another code, past
	// --max, a canary that did not pass) and new dead letters.
	Left             int     `json:"left"`
	FailedAgainCodes []Group `json:"failed_again_codes"`
	LeftCodes        []Group `json:"left_codes"`
}

// String is r on one line, for a person.
func (r *Result) String() string {
	return fmt.Sprintf("%d moved, %d failed again, %d left", r.Moved, r.FailedAgain, r.Left)
}

// Tally waits until settle has passed since the session's last move, then peeks at t's DLQ
// and counts what came back and what is left.
func (s *Session) Tally(ctx context.Context, api API, t *Target, settle time.Duration) (*Result, error) {
	if len(s.moved) > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(s.last.Add(settle))):
		}
	}
	p, err := Peek(context.WithoutCancel(ctx), api, t.DLQURL, DefaultLimit)
	if err != nil {
		return nil, fmt.Errorf("peek %s: %w", t.DLQ, err)
	}
	if t.delivery {
		// Copies that failed again died in the class DLQ; what is left is in the delivery DLQ.
		name, url := t.returnsTo()
		q, err := Peek(context.WithoutCancel(ctx), api, url, DefaultLimit)
		if err != nil {
			return nil, fmt.Errorf("peek %s: %w", name, err)
		}
		for _, l := range q.Letters {
			s.classify(l)
		}
	}
	var left []Letter
	for _, l := range p.Letters {
		if t.addressedTo(l) && s.classify(l) != back {
			left = append(left, l)
		}
	}
	again := make([]Letter, 0, len(s.back))
	for _, l := range s.back {
		again = append(again, l)
	}
	sort.Slice(again, func(i, j int) bool { return again[i].ID < again[j].ID })
	remaining := max(p.Depth-len(again), 0)
	if t.delivery {
		remaining = len(left) // the delivery DLQ holds other classes' letters too
	}
	return &Result{Moved: len(s.moved), FailedAgain: len(again), Left: remaining,
		FailedAgainCodes: GroupByCode(again), LeftCodes: GroupByCode(left)}, nil
}
