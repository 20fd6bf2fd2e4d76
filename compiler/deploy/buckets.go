package deploy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithy "github.com/aws/smithy-go"

	"github.com/fleetc/fleetc/compiler/lifecycle"
)

// bucketType is the resource whose deletion fails with BucketNotEmpty unless it is emptied
// first. fleetc never sets force_destroy: in production a bucket with objects in it must
// not go with a plain destroy; EmptyBuckets empties only what the operator accepted losing.
const bucketType = "aws_s3_bucket"

// BucketAPI is what emptying a bucket calls; *s3.Client has it.
type BucketAPI interface {
	ListObjectVersions(context.Context, *s3.ListObjectVersionsInput, ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// BucketClient makes the S3 client that empties the buckets of region ("" when neither the
// bucket's state nor the provider names one) at endpoint (the emulator, or "" for AWS). The
// command supplies it (fleetc's AWS client setup is fleet-worker's, runtime/awsconfig, which
// no compiler package imports).
type BucketClient func(ctx context.Context, region, endpoint string) (BucketAPI, error)

// EmptyBuckets deletes every object version and delete marker of each bucket the plan s
// deletes, so that applying it does not stop at BucketNotEmpty. Call it only once the loss
// of each has been accepted (--allow-data-loss, or --allow-replace naming it): the objects
// are gone for good. It reports each bucket it emptied to progress.
func (w *Workspace) EmptyBuckets(ctx context.Context, s *Summary, progress io.Writer, client BucketClient) error {
	var c BucketAPI
	for _, ch := range s.Changes {
		if ch.Action != lifecycle.Delete || ch.bucket == "" {
			continue
		}
		if c == nil {
			var err error
			if c, err = client(ctx, cmp.Or(ch.region, s.region), w.opts.Endpoint); err != nil {
				return err
			}
		}
		n, err := EmptyBucket(ctx, c, ch.bucket)
		if err != nil {
			return fmt.Errorf("emptying %s (%s): %w", ch.Address, ch.bucket, err)
		}
		if n > 0 {
			fmt.Fprintf(progress, "[%s] %s: emptied bucket %s (%d object versions and delete markers)\n", ch.Group, ch.Address, ch.bucket, n)
		}
	}
	return nil
}

// EmptyBucket deletes every object version and delete marker in bucket, a page (at most
// 1000, DeleteObjects' limit) at a time, listing again from the start until nothing is left;
// it returns how many it deleted. A bucket that no longer exists is already empty.
func EmptyBucket(ctx context.Context, c BucketAPI, bucket string) (int, error) {
	deleted := 0
	for {
		page, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
		if err != nil {
			if noSuchBucket(err) {
				return deleted, nil
			}
			return deleted, fmt.Errorf("ListObjectVersions: %w", err)
		}
		var ids []types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		if len(ids) == 0 {
			return deleted, nil
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return deleted, fmt.Errorf("DeleteObjects: %w", err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return deleted, fmt.Errorf("DeleteObjects: %d of %d not deleted, first %s (version %s): %s %s",
				len(out.Errors), len(ids), aws.ToString(e.Key), aws.ToString(e.VersionId), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		deleted += len(ids)
	}
}

func noSuchBucket(err error) bool {
	var nb *types.NoSuchBucket
	var ae smithy.APIError
	return errors.As(err, &nb) || (errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket")
}
