package claimcheck

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// A class reads only its fleet's bucket, under the prefixes its config lists, from the account
// it expects. The server is an httptest stand-in for S3 that answers GetObject as AWS documents
// (200 with the body) and records each request, so the test sees exactly what Fetch sends and
// that a refused reference sends nothing.
func TestFetchScope(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []*http.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	client := s3.New(s3.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{},
	})
	store := New(client, "fleet-cc", 1024)
	store.ReadPrefixes = []string{"inputs/", "outputs/planner/"}
	store.Owner = "123456789012"
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		ref  Ref
	}{
		{"another class's output", Ref{Type: "s3", Bucket: "fleet-cc", Key: "outputs/coder/abc/o.json"}},
		{"a prefix lookalike", Ref{Type: "s3", Bucket: "fleet-cc", Key: "outputs/planner-evil/x.json"}},
		{"the prefix itself", Ref{Type: "s3", Bucket: "fleet-cc", Key: "inputs/"}},
		{"another bucket", Ref{Type: "s3", Bucket: "someone-elses", Key: "inputs/x.json"}},
	} {
		if _, err := store.Fetch(ctx, tc.ref); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: err %v, want ErrRefused", tc.name, err)
		}
	}
	// Through Resolve too: a message naming another class's output is refused.
	if _, err := store.Resolve(ctx, []byte(`{"payload_ref":{"type":"s3","bucket":"fleet-cc","key":"outputs/coder/k/o.json"}}`)); !errors.Is(err, ErrRefused) {
		t.Errorf("Resolve: err %v, want ErrRefused", err)
	}
	if len(seen) != 0 {
		t.Fatalf("refused references still reached S3: %d requests", len(seen))
	}

	for _, key := range []string{"inputs/x.json", "outputs/planner/k/o.json"} {
		if b, err := store.Fetch(ctx, Ref{Type: "s3", Bucket: "fleet-cc", Key: key}); err != nil || string(b) != `{"ok":true}` {
			t.Fatalf("%s: %q, %v", key, b, err)
		}
		r := seen[len(seen)-1]
		if r.Method != http.MethodGet || r.URL.Path != "/fleet-cc/"+key || r.Header.Get("X-Amz-Expected-Bucket-Owner") != "123456789012" {
			t.Errorf("%s: %s %s owner %q", key, r.Method, r.URL.Path, r.Header.Get("X-Amz-Expected-Bucket-Owner"))
		}
	}

	// Without a known owner nothing is fetched.
	store.Owner = ""
	if _, err := store.Fetch(ctx, Ref{Type: "s3", Bucket: "fleet-cc", Key: "inputs/x.json"}); !errors.Is(err, ErrRefused) {
		t.Errorf("no owner: err %v", err)
	}
}

// Every write names the account that must own the bucket (ExpectedBucketOwner, the
// x-amz-expected-bucket-owner header): S3 answers 403 when a bucket of that name belongs to
// another account, so an output never lands in a bucket someone re-created under the fleet's
// name. Without a known owner nothing is written. The httptest S3 answers PutObject as AWS
// documents (200, an ETag) and records each request.
func TestPutNamesTheBucketOwner(t *testing.T) {
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Clone(context.Background()))
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	}))
	defer srv.Close()
	client := s3.New(s3.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{},
	})
	store := New(client, "fleet-cc", 4)
	store.Owner = "123456789012"
	ctx := context.Background()
	ref, err := store.Offload(ctx, "planner", "k", "o1", []byte(`{"big":true}`))
	if err != nil || ref == nil {
		t.Fatalf("offload: %v, %v", ref, err)
	}
	if len(seen) != 1 {
		t.Fatalf("%d requests, want one PutObject", len(seen))
	}
	if r := seen[0]; r.Method != http.MethodPut || r.URL.Path != "/fleet-cc/"+ref.Key || r.Header.Get("X-Amz-Expected-Bucket-Owner") != "123456789012" {
		t.Errorf("PutObject: %s %s owner %q", r.Method, r.URL.Path, r.Header.Get("X-Amz-Expected-Bucket-Owner"))
	}

	store.Owner = ""
	if err := store.Put(ctx, Ref{Type: "s3", Bucket: "fleet-cc", Key: "inputs/x.json"}, []byte(`{}`)); err == nil {
		t.Error("no owner: the object was written")
	}
	if len(seen) != 1 {
		t.Errorf("no owner: %d more requests reached S3", len(seen)-1)
	}
}
