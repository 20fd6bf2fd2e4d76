package claimcheck

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

func TestOutputKeyDeterministic(t *testing.T) {
	a := OutputKey("researcher", "arn:aws:states:us-east-1:1:execution:sm:e1/Researcher", "o1")
	b := OutputKey("researcher", "arn:aws:states:us-east-1:1:execution:sm:e1/Researcher", "o1")
	c := OutputKey("researcher", "arn:aws:states:us-east-1:1:execution:sm:e2/Researcher", "o1")
	// A claimant that lost its lease (another owner token) writes elsewhere,
	// never over the winner's recorded object.
	d := OutputKey("researcher", "arn:aws:states:us-east-1:1:execution:sm:e1/Researcher", "o2")
	if a != b || a == c || a == d {
		t.Fatalf("keys a=%s b=%s c=%s d=%s", a, b, c, d)
	}
	// sha256("k") is fixed; the key layout is part of the contract.
	if got, want := OutputKey("a/b", "k", "o/1"), "outputs/a_b/8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a/o_1.json"; got != want {
		t.Fatalf("OutputKey = %s, want %s", got, want)
	}
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok      bool
		wantErr bool
	}{
		{`{"trace_id":"t"}`, false, false},
		{`{"payload_ref":null}`, false, false},
		{`{"payload_ref":{"type":"s3","bucket":"b","key":"k"}}`, true, false},
		{`{"payload_ref":{"type":"gcs","bucket":"b","key":"k"}}`, false, true},
		{`{"payload_ref":{"type":"s3","bucket":"b"}}`, false, true},
		{`{"payload_ref":"s3://b/k"}`, false, true},
		{`[1]`, false, true},
	} {
		ref, ok, err := ParseRef([]byte(tc.in))
		if ok != tc.ok || (err != nil) != tc.wantErr {
			t.Errorf("%s: ok=%v err=%v", tc.in, ok, err)
		}
		if ok && (ref != Ref{Type: "s3", Bucket: "b", Key: "k"}) {
			t.Errorf("%s: ref %+v", tc.in, ref)
		}
	}
}

func TestOffloadNoBucket(t *testing.T) {
	s := New(nil, "", 4)
	if ref, err := s.Offload(context.Background(), "c", "k", "o1", []byte(`"ab"`)); ref != nil || err != nil {
		t.Fatalf("inline output: ref=%v err=%v", ref, err)
	}
	if _, err := s.Offload(context.Background(), "c", "k", "o1", []byte(`"abcd"`)); !errors.Is(err, ErrNoBucket) {
		t.Fatalf("err = %v, want ErrNoBucket", err)
	}
}

func TestKumoRoundTrip(t *testing.T) {
	counter := awsconfig.NewRequestCounter()
	cfg := kumotest.RequireWith(t, awsconfig.Options{Counter: counter})
	bucket := kumotest.Bucket(t, cfg, "cc")
	client := awsconfig.S3(cfg)
	ctx := context.Background()
	store := New(client, bucket, 1024)
	store.ReadPrefixes, store.Owner = []string{"inputs/", "outputs/researcher/"}, kumotest.Account

	// At the threshold: inline, and no S3 request at all.
	counter.Reset()
	small := []byte(`"` + strings.Repeat("s", 1022) + `"`)
	if ref, err := store.Offload(ctx, "researcher", "trace-1", "o1", small); ref != nil || err != nil {
		t.Fatalf("small output offloaded: %v %v", ref, err)
	}
	if n := counter.Count("s3"); n != 0 {
		t.Fatalf("inline output made %d S3 requests", n)
	}

	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 5000)})
	ref, err := store.Offload(ctx, "researcher", "trace-1", "o1", big)
	if err != nil {
		t.Fatal(err)
	}
	want := Ref{Type: "s3", Bucket: bucket, Key: OutputKey("researcher", "trace-1", "o1")}
	if ref == nil || *ref != want {
		t.Fatalf("ref = %+v, want %+v", ref, want)
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(ref.Key)})
	if err != nil {
		t.Fatal(err)
	}
	if ct := aws.ToString(head.ContentType); ct != ContentType {
		t.Fatalf("content type %q", ct)
	}
	obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(ref.Key)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if string(got) != string(big) {
		t.Fatalf("stored %d bytes, want %d", len(got), len(big))
	}

	// The reference round-trips into a consumer's input.
	refJSON, _ := json.Marshal(ref)
	detail := []byte(`{"trace_id":"t1","payload_ref":` + string(refJSON) + `,"step":7}`)
	resolved, err := store.Resolve(ctx, detail)
	if err != nil {
		t.Fatal(err)
	}
	var gotDetail, wantDetail map[string]any
	_ = json.Unmarshal(resolved, &gotDetail)
	_ = json.Unmarshal([]byte(`{"trace_id":"t1","step":7,"payload":`+string(big)+`}`), &wantDetail)
	if d := cmp.Diff(wantDetail, gotDetail); d != "" {
		t.Fatalf("resolved detail (-want +got):\n%s", d)
	}

	// Non-JSON payloads arrive as a JSON string.
	textRef := Ref{Type: "s3", Bucket: bucket, Key: "inputs/plain.txt"}
	if err := store.Put(ctx, textRef, []byte("hello\nworld")); err != nil {
		t.Fatal(err)
	}
	tj, _ := json.Marshal(textRef)
	resolved, err = store.Resolve(ctx, []byte(`{"payload_ref":`+string(tj)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(resolved) != `{"payload":"hello\nworld"}` {
		t.Fatalf("resolved %s", resolved)
	}

	// No reference: bytes pass through untouched.
	plain := []byte(`{"b":1, "a":2}`)
	if out, err := store.Resolve(ctx, plain); err != nil || string(out) != string(plain) {
		t.Fatalf("passthrough: %s %v", out, err)
	}

	// Missing object and oversize object are errors.
	if _, err := store.Fetch(ctx, Ref{Type: "s3", Bucket: bucket, Key: "inputs/nope"}); err == nil || errors.Is(err, ErrRefused) {
		t.Fatal("missing object: want error")
	}
	store.MaxFetchBytes = 100
	if _, err := store.Fetch(ctx, *ref); err == nil || !strings.Contains(err.Error(), "exceeds 100 bytes") {
		t.Fatalf("oversize fetch: %v", err)
	}
}

// A claimant that lost its lease writes its (late) output beside the
// winner's, never over it: the winner's recorded reference keeps its bytes.
// Write ignores the threshold (the caller decided to offload).
func TestWriteOwnersDoNotOverwrite(t *testing.T) {
	cfg := kumotest.Require(t)
	bucket := kumotest.Bucket(t, cfg, "cc")
	store := New(awsconfig.S3(cfg), bucket, 1<<20)
	store.ReadPrefixes, store.Owner = []string{"outputs/researcher/"}, kumotest.Account
	ctx := context.Background()
	winner, err := store.Write(ctx, "researcher", "trace-9", "owner-win", []byte(`{"v":"winner"}`))
	if err != nil {
		t.Fatal(err)
	}
	loser, err := store.Write(ctx, "researcher", "trace-9", "owner-late", []byte(`{"v":"loser"}`))
	if err != nil {
		t.Fatal(err)
	}
	if winner.Key == loser.Key {
		t.Fatalf("both claimants wrote %s", winner.Key)
	}
	got, err := store.Fetch(ctx, *winner)
	if err != nil || string(got) != `{"v":"winner"}` {
		t.Fatalf("winner's object: %s %v", got, err)
	}
	if _, err := New(nil, "", 0).Write(ctx, "c", "k", "o", []byte(`1`)); !errors.Is(err, ErrNoBucket) {
		t.Fatalf("no bucket: %v", err)
	}
}
