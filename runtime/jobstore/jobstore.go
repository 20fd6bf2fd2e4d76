// Package jobstore keeps async-tool job records (schemas/jobs.Record) in the fleet's jobs
// table. Both sides use it: the tools create, read and list jobs (PutItem, GetItem, Query on
// the owner index), the worker moves them (UpdateItem). Every write is conditional on the
// status it leaves, so a finished job (SUCCEEDED, FAILED) never moves again.
package jobstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fleetc/fleetc/schemas/jobs"
)

// API is the part of the DynamoDB client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// ErrConflict reports that a conditional write found the job in another state (or present,
// for Create).
var ErrConflict = errors.New("job is not in the expected state")

// Store is the jobs table.
type Store struct {
	API   API
	Table string
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{jobs.AttrPK: &types.AttributeValueMemberS{Value: jobs.Key(id)}}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// item is r as stored: the record's attributes plus the table and index keys.
func item(r *jobs.Record) (map[string]types.AttributeValue, error) {
	it, err := attributevalue.MarshalMap(r)
	if err != nil {
		return nil, err
	}
	it[jobs.AttrPK] = s(jobs.Key(r.JobID))
	if r.PrincipalID != "" {
		it[jobs.AttrOwner] = s(jobs.OwnerKey(r.PrincipalID, r.SessionID))
	}
	return it, nil
}

func conflict(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ErrConflict
	}
	return err
}

// Get reads one job (strongly consistent); nil when there is none.
func (st *Store) Get(ctx context.Context, id string) (*jobs.Record, error) {
	out, err := st.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.Table), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	var r jobs.Record
	if err := attributevalue.UnmarshalMap(out.Item, &r); err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return &r, nil
}

// Create writes r unless a job with its id exists (ErrConflict).
func (st *Store) Create(ctx context.Context, r *jobs.Record) error {
	it, err := item(r)
	if err != nil {
		return err
	}
	_, err = st.API.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.Table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": jobs.AttrPK}})
	return conflict(err)
}

// Replace writes r over the job when its status is still from (ErrConflict otherwise). The
// tools use it for QUEUED <-> FAILED_TO_START: a put, not an update, so the tools role needs
// no action the worker role has.
func (st *Store) Replace(ctx context.Context, r *jobs.Record, from jobs.Status) error {
	it, err := item(r)
	if err != nil {
		return err
	}
	_, err = st.API.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.Table), Item: it,
		ConditionExpression:       aws.String("#s = :from"),
		ExpressionAttributeNames:  map[string]string{"#s": jobs.AttrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":from": s(string(from))}})
	return conflict(err)
}

// Cursor is where a List page ends: the last job's sort key and id.
type Cursor struct {
	CreatedAt string `json:"c"`
	JobID     string `json:"j"`
}

// List returns an owner's jobs in one session, newest first, at most limit, optionally only
// those in status; next is nil on the last page. A status filter is applied after the page is
// read (DynamoDB filters after Limit), so a filtered page may hold fewer than limit jobs.
func (st *Store) List(ctx context.Context, principal, session string, status jobs.Status, limit int32, after *Cursor) (out []jobs.Record, next *Cursor, err error) {
	owner := jobs.OwnerKey(principal, session)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(st.Table),
		IndexName:                 aws.String(jobs.OwnerIndex),
		KeyConditionExpression:    aws.String("#o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": jobs.AttrOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": s(owner)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(limit),
	}
	if status != "" {
		in.FilterExpression = aws.String("#s = :s")
		in.ExpressionAttributeNames["#s"] = jobs.AttrStatus
		in.ExpressionAttributeValues[":s"] = s(string(status))
	}
	if after != nil {
		// Built from the cursor and the caller's own owner key: a token cannot reach another
		// owner's partition.
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			jobs.AttrPK: s(jobs.Key(after.JobID)), jobs.AttrOwner: s(owner), jobs.AttrCreatedAt: s(after.CreatedAt),
		}
	}
	res, err := st.API.Query(ctx, in)
	if err != nil {
		return nil, nil, fmt.Errorf("list jobs: %w", err)
	}
	if err := attributevalue.UnmarshalListOfMaps(res.Items, &out); err != nil {
		return nil, nil, fmt.Errorf("list jobs: %w", err)
	}
	if len(res.LastEvaluatedKey) > 0 {
		// The page ends at the last item read: its sort key and id are the cursor. (Read from
		// the item, not LastEvaluatedKey, which a filtered page may leave past the last
		// returned item and which emulators fill inconsistently.)
		next = &Cursor{}
		if n := len(res.Items); n > 0 {
			last := res.Items[n-1]
			if v, ok := last[jobs.AttrCreatedAt].(*types.AttributeValueMemberS); ok {
				next.CreatedAt = v.Value
			}
			if v, ok := last[jobs.AttrJobID].(*types.AttributeValueMemberS); ok {
				next.JobID = v.Value
			}
		}
		if lek, ok := res.LastEvaluatedKey[jobs.AttrCreatedAt].(*types.AttributeValueMemberS); ok && next.CreatedAt == "" {
			next.CreatedAt = lek.Value
		}
		if lek, ok := res.LastEvaluatedKey[jobs.AttrPK].(*types.AttributeValueMemberS); ok && next.JobID == "" && len(lek.Value) > len(jobs.KeyPrefix) {
			next.JobID = lek.Value[len(jobs.KeyPrefix):]
		}
	}
	return out, next, nil
}

// Updater is the one DynamoDB call the worker's side makes.
type Updater interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Mover is the worker's side: UpdateItem only, each conditional on the job not being
// finished.
type Mover struct {
	API   Updater
	Table string
}

// Result is what a finished job's record carries for the status tool.
type Result struct {
	ArtifactURI string // the handler output's artifactUri, when it has one
	ResultRef   string // JSON claim-check reference, when the output was offloaded
	Result      string // the output itself, when small
}

// ErrFinished reports that a worker write found the job SUCCEEDED or FAILED.
var ErrFinished = errors.New("job already finished")

func (st *Mover) update(ctx context.Context, id, expr string, vals map[string]types.AttributeValue, now string) error {
	vals[":now"] = s(now)
	vals[":ok"] = s(string(jobs.Succeeded))
	vals[":failed"] = s(string(jobs.Failed))
	_, err := st.API.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.Table),
		Key:                       key(id),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("attribute_not_exists(#s) OR NOT (#s IN (:ok, :failed))"),
		ExpressionAttributeNames:  map[string]string{"#s": jobs.AttrStatus},
		ExpressionAttributeValues: vals,
	})
	if errors.Is(conflict(err), ErrConflict) {
		return ErrFinished
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	return nil
}

// Running marks the job RUNNING (from QUEUED, FAILED_TO_START when the event arrived after
// all, or no record for an event published outside the tools).
func (st *Mover) Running(ctx context.Context, id, now string) error {
	return st.update(ctx, id, "SET #s = :running, "+jobs.AttrUpdatedAt+" = :now",
		map[string]types.AttributeValue{":running": s(string(jobs.Running))}, now)
}

// Succeeded marks the job SUCCEEDED with its result.
func (st *Mover) Succeeded(ctx context.Context, id string, r Result, now string) error {
	expr := "SET #s = :ok, " + jobs.AttrUpdatedAt + " = :now"
	vals := map[string]types.AttributeValue{}
	for _, f := range []struct{ attr, val string }{{jobs.AttrArtifactURI, r.ArtifactURI}, {jobs.AttrResultRef, r.ResultRef}, {jobs.AttrResult, r.Result}} {
		if f.val != "" {
			expr += ", " + f.attr + " = :" + f.attr
			vals[":"+f.attr] = s(f.val)
		}
	}
	return st.update(ctx, id, expr+" REMOVE "+jobs.AttrError, vals, now)
}

// Failed marks the job FAILED with the error.
func (st *Mover) Failed(ctx context.Context, id, message, now string) error {
	if message == "" {
		message = "failed"
	}
	return st.update(ctx, id, "SET #s = :failed, "+jobs.AttrError+" = :msg, "+jobs.AttrUpdatedAt+" = :now",
		map[string]types.AttributeValue{":msg": s(message)}, now)
}
