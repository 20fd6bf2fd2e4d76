package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// TestEmptyBucketOnKumo fills two buckets on kumo, one versioned (two versions of a key and
// a delete marker) and one not, and checks EmptyBucket leaves each one DeleteBucket accepts:
// without it DeleteBucket answers BucketNotEmpty, which is what stopped dev's teardown.
func TestEmptyBucketOnKumo(t *testing.T) {
	t.Parallel() // an emulator test: see environWith
	ctx := context.Background()
	endpoint, err := verifytest.Kumo(ctx)
	verifytest.SkipIfMissing(t, err)
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	c := awsconfig.S3(cfg)
	for _, versioned := range []bool{true, false} {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		bucket := "fleetc-empty-" + hex.EncodeToString(b)
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		if versioned {
			if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range []string{"results/a.json", "results/a.json", "results/b.json", "gone.json"} {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("{}")}); err != nil {
				t.Fatal(err)
			}
		}
		// Versioned: a delete marker over gone.json's version; unversioned: gone.json goes.
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("gone.json")}); err != nil {
			t.Fatal(err)
		}
		want := 2 // a.json (overwritten) and b.json
		if versioned {
			want = 5 // a.json's two versions, b.json, gone.json's version and its delete marker
		}
		n, err := EmptyBucket(ctx, c, bucket)
		if err != nil || n != want {
			t.Errorf("versioned=%v: EmptyBucket deleted %d, %v; want %d", versioned, n, err, want)
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatalf("versioned=%v: DeleteBucket after EmptyBucket: %v", versioned, err)
		}
		// A bucket already gone is empty.
		if n, err := EmptyBucket(ctx, c, bucket); err != nil || n != 0 {
			t.Errorf("versioned=%v: EmptyBucket of a deleted bucket: %d, %v", versioned, n, err)
		}
	}
}
