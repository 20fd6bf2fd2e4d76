package idem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/contract"
)

// Attribute names of the idempotency table (pk S = key, sk S = class).
const (
	attrPK         = "pk"
	attrSK         = "sk"
	attrStatus     = "status"
	attrOwner      = "owner"
	attrLeaseUntil = "lease_until"                   // N, unix seconds
	attrExpiresAt  = contract.IdempotencyExpiresAttr // N, unix seconds; the table's TTL attribute
	attrResult     = "result"                        // S, JSON
	attrPublished  = "published"                     // BOOL
	attrUpdatedAt  = "updated_at"                    // N, unix seconds
	attrTraceID    = "trace_id"                      // S: the conversation's trace id, when the claimant knew it (WithTraceID)

	statusRunning = "running"
	statusDone    = "done"
)

// DynamoAPI is the part of the DynamoDB client the store uses.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Dynamo is the DynamoDB-backed Store.
type Dynamo struct {
	API    DynamoAPI
	Table  string
	Class  string        // sort key
	Window time.Duration // how long records are kept (expires_at)
	Now    func() time.Time
}

// MaxResultBytes keeps a record under DynamoDB's 400 KB item limit, leaving 50 KiB for the
// record's keys and other attributes; the worker stores larger results by claim-check
// reference.
const MaxResultBytes = awslimits.DynamoDBMaxItemBytes - 50<<10

// ErrResultTooLarge is returned by Complete for results over the item limit.
var ErrResultTooLarge = fmt.Errorf("idempotency result above %d KiB; store it by reference", MaxResultBytes>>10)

func (d *Dynamo) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dynamo) key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: s(k), attrSK: s(d.Class)}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func token() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// leaseEnd rounds up so a lease never ends before the visibility cycle does.
func leaseEnd(now time.Time, lease time.Duration) int64 {
	return now.Add(lease + time.Second - 1).Unix()
}

// expiresAt is when a record written now may be treated as gone: the
// window, but never before the lease ends (a record past expires_at is
// claimable, so a short window must not cut a live lease short).
func (d *Dynamo) expiresAt(now time.Time, lease time.Duration) int64 {
	exp := now.Add(d.Window).Unix()
	if lu := leaseEnd(now, lease); lu > exp {
		exp = lu
	}
	return exp
}

// Acquire claims key with one conditional put: absent, or a running record
// whose lease ended, or a record past its window (TTL deletion lags, so
// expired records are treated as absent).
func (d *Dynamo) Acquire(ctx context.Context, key string, lease time.Duration) (Claim, error) {
	for attempt := 0; attempt < 3; attempt++ {
		now := d.now()
		owner := token()
		item := d.key(key)
		item[attrStatus] = s(statusRunning)
		item[attrOwner] = s(owner)
		item[attrLeaseUntil] = n(leaseEnd(now, lease))
		item[attrExpiresAt] = n(d.expiresAt(now, lease))
		item[attrUpdatedAt] = n(now.Unix())
		if t := traceIDFrom(ctx); t != "" {
			item[attrTraceID] = s(t)
		}
		_, err := d.API.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                aws.String(d.Table),
			Item:                     item,
			ConditionExpression:      aws.String("attribute_not_exists(pk) OR (#s = :running AND lease_until < :now) OR expires_at < :now"),
			ExpressionAttributeNames: map[string]string{"#s": attrStatus},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":running": s(statusRunning),
				":now":     n(now.Unix()),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return Claim{State: Acquired, Owner: owner}, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return Claim{}, fmt.Errorf("idempotency acquire: %w", err)
		}
		old := ccf.Item
		if len(old) == 0 {
			// kumo (and older APIs) return no item on failure: read it.
			out, err := d.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Table), Key: d.key(key), ConsistentRead: aws.Bool(true)})
			if err != nil {
				return Claim{}, fmt.Errorf("idempotency read: %w", err)
			}
			old = out.Item
			if len(old) == 0 {
				continue // deleted in between: claim again
			}
		}
		c, ok := claimFrom(old, d.now())
		if ok && c.State == Done && !c.Published {
			// Finished but never published, and its publisher's lease has
			// ended: take the publish lease, so one duplicate publishes.
			c.Owner, ok = d.takePublish(ctx, key, lease)
			if ok {
				return c, nil
			}
			continue
		}
		if ok {
			return c, nil
		}
		// The record changed between the put and the read (reclaimable now):
		// try the conditional put again.
	}
	return Claim{}, errors.New("idempotency acquire: record kept changing; try later")
}

// claimFrom interprets an existing record; ok=false means it looks claimable
// (raced), so the caller should retry the put.
func claimFrom(item map[string]types.AttributeValue, now time.Time) (Claim, bool) {
	status := str(item[attrStatus])
	exp := num(item[attrExpiresAt])
	if exp > 0 && exp < now.Unix() {
		return Claim{}, false
	}
	switch status {
	case statusDone:
		c := Claim{State: Done, Result: json.RawMessage(str(item[attrResult]))}
		if b, ok := item[attrPublished].(*types.AttributeValueMemberBOOL); ok {
			c.Published = b.Value
		}
		if len(c.Result) == 0 {
			c.Result = json.RawMessage("null")
		}
		if !c.Published {
			if lu := num(item[attrLeaseUntil]); lu >= now.Unix() {
				// Its publisher is still at work.
				return Claim{State: Busy, LeaseUntil: time.Unix(lu, 0)}, true
			}
		}
		return c, true
	case statusRunning:
		lu := num(item[attrLeaseUntil])
		if lu < now.Unix() {
			return Claim{}, false
		}
		return Claim{State: Busy, LeaseUntil: time.Unix(lu, 0)}, true
	}
	return Claim{}, false
}

func str(v types.AttributeValue) string {
	if x, ok := v.(*types.AttributeValueMemberS); ok {
		return x.Value
	}
	return ""
}

func num(v types.AttributeValue) int64 {
	if x, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(x.Value, 10, 64)
		return i
	}
	return 0
}

func lost(err error, op string) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("idempotency %s: %w", op, ErrLost)
	}
	return fmt.Errorf("idempotency %s: %w", op, err)
}

// Extend renews the lease, only while the caller still owns it. expires_at
// moves with it: a running record past expires_at counts as absent, so a
// step longer than the window would otherwise be stolen mid-run.
func (d *Dynamo) Extend(ctx context.Context, key, owner string, lease time.Duration) error {
	now := d.now()
	_, err := d.API.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.Table),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET lease_until = :lu, expires_at = :exp, updated_at = :now"),
		ConditionExpression:      aws.String("#o = :me AND #s = :running"),
		ExpressionAttributeNames: map[string]string{"#o": attrOwner, "#s": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":lu": n(leaseEnd(now, lease)), ":exp": n(d.expiresAt(now, lease)), ":now": n(now.Unix()), ":me": s(owner), ":running": s(statusRunning),
		},
	})
	if err != nil {
		return lost(err, "extend")
	}
	return nil
}

// takePublish claims the publish lease of a done, unpublished record whose
// lease ended; ok=false when another claimant got there first.
func (d *Dynamo) takePublish(ctx context.Context, key string, lease time.Duration) (owner string, ok bool) {
	now := d.now()
	owner = token()
	_, err := d.API.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.Table),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET #o = :me, lease_until = :lu, updated_at = :now"),
		ConditionExpression:      aws.String("#s = :done AND published = :f AND (attribute_not_exists(lease_until) OR lease_until < :now)"),
		ExpressionAttributeNames: map[string]string{"#o": attrOwner, "#s": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": s(owner), ":lu": n(leaseEnd(now, lease)), ":now": n(now.Unix()),
			":done": s(statusDone), ":f": &types.AttributeValueMemberBOOL{Value: false},
		},
	})
	return owner, err == nil
}

// Complete stores the result, conditional on the caller owning the lease (a
// reclaimed lease means another claimant now owns the work).
func (d *Dynamo) Complete(ctx context.Context, key, owner string, result json.RawMessage, published bool, lease time.Duration) error {
	if len(result) > MaxResultBytes {
		return ErrResultTooLarge
	}
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	now := d.now()
	_, err := d.API.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.Table),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET #s = :done, #r = :r, published = :p, lease_until = :lu, expires_at = :exp, updated_at = :now"),
		ConditionExpression:      aws.String("#o = :me AND #s = :running"),
		ExpressionAttributeNames: map[string]string{"#o": attrOwner, "#s": attrStatus, "#r": attrResult},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":done": s(statusDone), ":r": s(string(result)), ":p": &types.AttributeValueMemberBOOL{Value: published},
			":lu": n(leaseEnd(now, lease)), ":exp": n(d.expiresAt(now, lease)), ":now": n(now.Unix()), ":me": s(owner), ":running": s(statusRunning),
		},
	})
	if err != nil {
		return lost(err, "complete")
	}
	return nil
}

// MarkPublished sets published = true on a done record.
func (d *Dynamo) MarkPublished(ctx context.Context, key string) error {
	_, err := d.API.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       d.key(key),
		UpdateExpression:          aws.String("SET published = :t REMOVE lease_until"),
		ConditionExpression:       aws.String("#s = :done"),
		ExpressionAttributeNames:  map[string]string{"#s": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}, ":done": s(statusDone)},
	})
	if err != nil {
		return lost(err, "mark published")
	}
	return nil
}

// Abandon deletes the caller's running claim.
func (d *Dynamo) Abandon(ctx context.Context, key, owner string) error {
	_, err := d.API.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       d.key(key),
		ConditionExpression:       aws.String("#o = :me AND #s = :running"),
		ExpressionAttributeNames:  map[string]string{"#o": attrOwner, "#s": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": s(owner), ":running": s(statusRunning)},
	})
	if err != nil {
		return lost(err, "abandon")
	}
	return nil
}

// Lookup reads key's record without claiming anything (operators' tools: did a redriven step
// complete?). A record past its window reads as absent, as Acquire treats it.
func (d *Dynamo) Lookup(ctx context.Context, key string) (Claim, bool, error) {
	out, err := d.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Table), Key: d.key(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Claim{}, false, fmt.Errorf("idempotency read: %w", err)
	}
	if len(out.Item) == 0 {
		return Claim{}, false, nil
	}
	c, ok := claimFrom(out.Item, d.now())
	return c, ok, nil
}
