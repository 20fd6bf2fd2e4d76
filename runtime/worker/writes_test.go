package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/worker"
)

// writeCounter counts the DynamoDB writes (PutItem, UpdateItem, DeleteItem) that reach kumo.
type writeCounter struct {
	idem.DynamoAPI
	mu     sync.Mutex
	writes []string
}

func (c *writeCounter) note(op string) {
	c.mu.Lock()
	c.writes = append(c.writes, op)
	c.mu.Unlock()
}

func (c *writeCounter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.note("PutItem")
	return c.DynamoAPI.PutItem(ctx, in, o...)
}

func (c *writeCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.note("UpdateItem")
	return c.DynamoAPI.UpdateItem(ctx, in, o...)
}

func (c *writeCounter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.note("DeleteItem")
	return c.DynamoAPI.DeleteItem(ctx, in, o...)
}

func (c *writeCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// flakyPublisher fails its first n calls.
type flakyPublisher struct {
	fails atomic.Int64
	recPublisher
}

func (f *flakyPublisher) PublishAll(ctx context.Context, e []events.Entry) error {
	if f.fails.Add(-1) >= 0 {
		return &events.EntryError{Code: "ThrottlingException", Message: "slow down", Attempts: 4}
	}
	return f.recPublisher.PublishAll(ctx, e)
}

// A step that emits an event costs two DynamoDB writes: the claim (PutItem) and the
// completion, recorded already published (UpdateItem). Only when publishing fails does the
// delivery that later publishes set the flag: a third write on that path alone.
func TestDynamoWritesPerEmittingStep(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "wr")
	clk := newFixClock()
	var calls atomic.Int64
	api := &writeCounter{DynamoAPI: kumotest.DynamoDB(cfg)}
	w := fixWorker(t, api, table, clk, &calls, openEmit, 204800)
	pub := &flakyPublisher{}
	w.Events = pub
	body := []byte(`{"id":"evt-w1","detail-type":"x","source":"y","detail":{"trace_id":"w1"}}`)
	if r := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: body, Attempt: 1}); r.Action != queue.Delete {
		t.Fatalf("%v %v", r.Action, r.Reason)
	}
	if got := api.take(); len(got) != 2 || got[0] != "PutItem" || got[1] != "UpdateItem" {
		t.Errorf("writes for one emitting step: %v, want [PutItem UpdateItem]", got)
	}
	if len(pub.entries) != 1 {
		t.Errorf("%d events, want 1", len(pub.entries))
	}

	// Publishing fails: the result is recorded (unpublished) and the message released; the
	// redelivery publishes from the record and sets the flag.
	pub.fails.Store(1)
	body = []byte(`{"id":"evt-w2","detail-type":"x","source":"y","detail":{"trace_id":"w2"}}`)
	r := w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: body, Attempt: 1})
	if r.Action != queue.Release || r.Reason == nil || r.Reason.Code != "PublishFailed" {
		t.Fatalf("publish failure: %v %v, want Release PublishFailed", r.Action, r.Reason)
	}
	api.take()
	clk.add(45 * time.Second) // the failed publisher's lease (one visibility cycle, 30 s) ends
	r = w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: body, Attempt: 2})
	if r.Action != queue.Delete || !r.Duplicate {
		t.Fatalf("redelivery: %v %v, want a Delete answered from the record", r.Action, r.Reason)
	}
	// The redelivery's claim is a conditional put that fails (not a write), then it takes
	// the publish lease and, once the event is out, sets the flag.
	if got := api.take(); len(got) != 3 || got[1] != "UpdateItem" || got[2] != "UpdateItem" {
		t.Errorf("redelivery writes: %v, want [PutItem(refused) UpdateItem(publish lease) UpdateItem(published)]", got)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("handler ran %d times for two units of work", n)
	}
	if len(pub.entries) != 2 {
		t.Errorf("%d events, want 2", len(pub.entries))
	}
}
