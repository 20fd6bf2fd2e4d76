// Package claimcheck moves step payloads that are too large for SQS,
// EventBridge or Step Functions through S3, per the claim-check pattern:
// the message carries a small reference, the bytes live in S3.
//
// Inputs: a message detail may carry
//
//	"payload_ref": {"type": "s3", "bucket": "...", "key": "..."}
//
// Store.Resolve fetches the object and returns the detail with
// payload_ref replaced by "payload" (the object's JSON, or a JSON string
// when the object is not JSON). Details without payload_ref pass through
// byte-for-byte.
//
// Outputs: Store.Offload leaves an output of at most ThresholdBytes inline
// and writes a larger one to S3 under a key derived from the class, the
// work (idempotency) key and the claimant's lease token, so a claimant
// that lost its lease cannot overwrite the object the winner recorded,
// and returns its Ref for the completion event's "result_ref".
package claimcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// RefField is the detail field that carries an input reference.
const RefField = "payload_ref"

// ResultRefField is the completion field that carries an offloaded output's reference.
const ResultRefField = "result_ref"

// PayloadField is the field Resolve puts the fetched payload in.
const PayloadField = "payload"

// ContentType is set on every object Offload writes.
const ContentType = "application/json"

// DefaultMaxFetchBytes bounds Fetch so a bad reference cannot exhaust
// memory (SQS's extended client allows 2 GB; a worker step should not).
const DefaultMaxFetchBytes = 64 << 20

// ErrNoBucket is returned by Offload when an output exceeds the threshold
// but no claim-check bucket is configured.
var ErrNoBucket = errors.New("claimcheck: output exceeds threshold_bytes but no claim-check bucket is configured (set claim_check.bucket or FLEET_CLAIM_CHECK_BUCKET)")

// Ref is an S3 claim-check reference, as carried in payload_ref and
// result_ref.
type Ref struct {
	Type   string `json:"type"`
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
}

// Validate reports whether r is a usable S3 reference.
func (r Ref) Validate() error {
	if r.Type != "s3" {
		return fmt.Errorf("claimcheck: unsupported reference type %q (want \"s3\")", r.Type)
	}
	if r.Bucket == "" || r.Key == "" {
		return errors.New("claimcheck: reference needs bucket and key")
	}
	return nil
}

// S3API is the subset of *s3.Client the store uses.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Store reads input references and offloads large outputs.
type Store struct {
	Client S3API
	// Bucket receives offloaded outputs (claim_check.bucket).
	Bucket string
	// ThresholdBytes: outputs longer than this go to S3 (claim_check.threshold_bytes).
	ThresholdBytes int
	// MaxFetchBytes bounds Fetch; 0 means DefaultMaxFetchBytes.
	MaxFetchBytes int64
	// ReadPrefixes are the keys Fetch may read in Bucket (claim_check.read_prefixes); a
	// message naming another bucket or key is refused before any request, so a class cannot
	// be made to load another class's outputs. Empty: no reference is accepted.
	ReadPrefixes []string
	// Owner is the account that must own Bucket, sent as ExpectedBucketOwner on every read
	// and write: a bucket deleted and re-created by someone else under the same name answers
	// 403, neither serving their data nor receiving ours. Empty: nothing is read or written.
	Owner string
}

// ErrRefused is a reference Fetch will not follow: the message is poison, not a transient failure.
var ErrRefused = errors.New("claimcheck: reference refused")

// allowed reports why ref may not be read, or nil.
func (s *Store) allowed(ref Ref) error {
	if ref.Bucket != s.Bucket || s.Bucket == "" {
		return fmt.Errorf("%w: bucket %q is not this fleet's claim-check bucket", ErrRefused, ref.Bucket)
	}
	if s.Owner == "" {
		return fmt.Errorf("%w: the bucket owner's account is unknown", ErrRefused)
	}
	for _, p := range s.ReadPrefixes {
		if strings.HasPrefix(ref.Key, p) && len(ref.Key) > len(p) {
			return nil
		}
	}
	return fmt.Errorf("%w: key %q is outside what this class may read (%s)", ErrRefused, ref.Key, strings.Join(s.ReadPrefixes, ", "))
}

// New returns a Store.
func New(client S3API, bucket string, thresholdBytes int) *Store {
	return &Store{Client: client, Bucket: bucket, ThresholdBytes: thresholdBytes}
}

// ParseRef returns the payload_ref of a JSON object detail, if any.
// ok is false when the field is absent or null; a present but malformed
// reference is an error (the message is poison, not a transient failure).
func ParseRef(detail []byte) (ref Ref, ok bool, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(detail, &fields); err != nil {
		return Ref{}, false, fmt.Errorf("claimcheck: detail is not a JSON object: %w", err)
	}
	raw, present := fields[RefField]
	if !present || string(raw) == "null" {
		return Ref{}, false, nil
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		return Ref{}, false, fmt.Errorf("claimcheck: %s: %w", RefField, err)
	}
	if err := ref.Validate(); err != nil {
		return Ref{}, false, err
	}
	return ref, true, nil
}

// Fetch reads the referenced object.
func (s *Store) Fetch(ctx context.Context, ref Ref) ([]byte, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if err := s.allowed(ref); err != nil {
		return nil, err
	}
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(ref.Bucket), Key: aws.String(ref.Key), ExpectedBucketOwner: aws.String(s.Owner)})
	if err != nil {
		return nil, fmt.Errorf("claimcheck: get s3://%s/%s: %w", ref.Bucket, ref.Key, err)
	}
	defer out.Body.Close()
	limit := s.MaxFetchBytes
	if limit <= 0 {
		limit = DefaultMaxFetchBytes
	}
	b, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("claimcheck: read s3://%s/%s: %w", ref.Bucket, ref.Key, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("claimcheck: s3://%s/%s exceeds %d bytes", ref.Bucket, ref.Key, limit)
	}
	return b, nil
}

// Resolve returns detail with payload_ref replaced by the fetched
// payload, or detail unchanged when it has no reference. Key order of the
// result is sorted (encoding/json), so it is deterministic.
func (s *Store) Resolve(ctx context.Context, detail []byte) ([]byte, error) {
	ref, ok, err := ParseRef(detail)
	if err != nil || !ok {
		return detail, err
	}
	body, err := s.Fetch(ctx, ref)
	if err != nil {
		return nil, err
	}
	payload := json.RawMessage(body)
	if !json.Valid(body) {
		quoted, err := json.Marshal(string(body))
		if err != nil {
			return nil, err
		}
		payload = quoted
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(detail, &fields); err != nil {
		return nil, err
	}
	delete(fields, RefField)
	fields[PayloadField] = payload
	return json.Marshal(fields)
}

// OutputKey is the S3 key for a class's output of one unit of work by one
// claimant: "outputs/<class>/<sha256(workKey) hex>/<owner>.json". The owner
// (the idempotency lease token) keeps a worker that lost its lease from
// overwriting the winner's object: only the claimant whose conditional
// store succeeds has its key recorded. Hashing keeps arbitrary work keys
// (ARNs, slashes) out of the key's structure.
func OutputKey(class, workKey, owner string) string {
	sum := sha256.Sum256([]byte(workKey))
	return "outputs/" + sanitize(class) + "/" + hex.EncodeToString(sum[:]) + "/" + sanitize(owner) + ".json"
}

func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// Offload returns (nil, nil) when output fits inline (len <= ThresholdBytes),
// else writes it like Write.
func (s *Store) Offload(ctx context.Context, class, workKey, owner string, output []byte) (*Ref, error) {
	if len(output) <= s.ThresholdBytes {
		return nil, nil
	}
	return s.Write(ctx, class, workKey, owner, output)
}

// Write stores output at OutputKey(class, workKey, owner) as
// application/json whatever its size (the caller decided it must not go
// inline, e.g. a Step Functions task output) and returns the reference.
func (s *Store) Write(ctx context.Context, class, workKey, owner string, output []byte) (*Ref, error) {
	if s.Bucket == "" {
		return nil, ErrNoBucket
	}
	ref := Ref{Type: "s3", Bucket: s.Bucket, Key: OutputKey(class, workKey, owner)}
	if err := s.Put(ctx, ref, output); err != nil {
		return nil, err
	}
	return &ref, nil
}

// Put writes body to ref as application/json (producers use it to create
// input references), only into a bucket Owner owns.
func (s *Store) Put(ctx context.Context, ref Ref, body []byte) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if s.Owner == "" {
		return fmt.Errorf("claimcheck: put s3://%s/%s: the bucket owner's account is unknown", ref.Bucket, ref.Key)
	}
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:              aws.String(ref.Bucket),
		Key:                 aws.String(ref.Key),
		Body:                bytes.NewReader(body),
		ContentLength:       aws.Int64(int64(len(body))),
		ContentType:         aws.String(ContentType),
		ExpectedBucketOwner: aws.String(s.Owner), // a same-named bucket of another account gets nothing
	})
	if err != nil {
		return fmt.Errorf("claimcheck: put s3://%s/%s: %w", ref.Bucket, ref.Key, err)
	}
	return nil
}
