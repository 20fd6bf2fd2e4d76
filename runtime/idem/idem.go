// Package idem makes a step's side effects happen once per unit of work.
//
// A record per work key (event id or trace id + class, never the SQS
// message id, which changes per delivery) lives in DynamoDB: a conditional
// put claims it with a lease of one visibility cycle, the result is stored
// on completion, and later deliveries of the same work are answered from the
// stored result. A lease that expired (its holder died) is reclaimed, again
// conditionally, so exactly one claimant wins.
package idem

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// State is the outcome of Acquire.
type State int

const (
	// Acquired: the caller owns the work and must run it.
	Acquired State = iota
	// Done: the work completed before; answer from Result. When Published
	// is false the caller also holds the publish lease (Owner) and must
	// emit the completion events, then MarkPublished.
	Done
	// Busy: another live lease holds the work (running, or completed and
	// still publishing); come back after LeaseUntil.
	Busy
)

func (s State) String() string {
	switch s {
	case Acquired:
		return "acquired"
	case Done:
		return "done"
	case Busy:
		return "busy"
	}
	return "unknown"
}

// Claim is the answer to Acquire.
type Claim struct {
	State      State
	Owner      string          // Acquired, or Done and unpublished: the lease token
	Result     json.RawMessage // Done: the stored result
	Published  bool            // Done: completion events/callback already sent
	LeaseUntil time.Time       // Busy: when the other holder's lease ends
}

// ErrLost means the caller's lease was taken over (it expired and another
// claimant reclaimed it, or the record vanished).
var ErrLost = errors.New("idempotency lease lost")

// Store is the consumer-side interface the worker uses.
type Store interface {
	// Acquire claims key for lease, or reports it done or busy.
	Acquire(ctx context.Context, key string, lease time.Duration) (Claim, error)
	// Extend renews the caller's lease (heartbeat).
	Extend(ctx context.Context, key, owner string, lease time.Duration) error
	// Complete stores the result; the record is kept for the window. With
	// published false the caller keeps a publish lease until MarkPublished,
	// so concurrent duplicates wait instead of emitting events twice.
	Complete(ctx context.Context, key, owner string, result json.RawMessage, published bool, lease time.Duration) error
	// MarkPublished records that completion events and callbacks went out,
	// so duplicates do not re-emit them.
	MarkPublished(ctx context.Context, key string) error
	// Abandon drops the caller's claim after a failure, so the next attempt
	// (a retry, or a human's redrive after a fix) runs the work again.
	Abandon(ctx context.Context, key, owner string) error
}
