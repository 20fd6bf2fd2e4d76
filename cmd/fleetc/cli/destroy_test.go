package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// leaveMapResults leaves in fleet name's claim-check bucket on kumo what a workflow's Map
// result writer leaves there: two versions of a result and a deleted manifest (a delete
// marker), which terraform alone cannot destroy (BucketNotEmpty). It returns the client, the
// bucket and how many object versions and delete markers the bucket now holds.
func leaveMapResults(t *testing.T, endpoint, name string) (*s3.Client, string, int) {
	t.Helper()
	ctx := context.Background()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	c := awsconfig.S3(cfg)
	bucket := fleetBucket(t, c, name)
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"results/map/0.json", "results/map/0.json", "results/map/manifest.json"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("results/map/manifest.json")}); err != nil {
		t.Fatal(err)
	}
	n := objectVersions(t, c, bucket)
	if n < 4 {
		t.Fatalf("bucket %s holds %d object versions and delete markers after the Map results, want at least 4", bucket, n)
	}
	return c, bucket, n
}

// objectVersions counts bucket's object versions and delete markers.
func objectVersions(t *testing.T, c *s3.Client, bucket string) int {
	t.Helper()
	v, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	return len(v.Versions) + len(v.DeleteMarkers)
}

// fleetBucket is the one bucket on kumo whose name holds the fleet's unique name.
func fleetBucket(t *testing.T, c *s3.Client, name string) string {
	t.Helper()
	out, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, b := range out.Buckets {
		if strings.Contains(aws.ToString(b.Name), name) {
			found = append(found, aws.ToString(b.Name))
		}
	}
	if len(found) != 1 {
		t.Fatalf("buckets of fleet %s on kumo: %v, want one", name, found)
	}
	return found[0]
}
