// Package apikey gives fleet-worker's OpenAI-compatible targets their API key: a fixed
// value (api_key_env: fleetc dev and local runs) or a Secrets Manager secret / SSM
// SecureString parameter (api_key: a deployed function), read at start, cached, and read
// again when the upstream answers 401, so a rotated key is picked up without a restart.
//
// A burst of 401s costs one read: the requests that were refused the same key wait for
// one fetch, and a key that was just re-read and is still refused is not read again for
// RefetchAfter. No value ever leaves this package except as the bearer token: errors name
// the secret or parameter, never its content.
package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// RefetchAfter is how long a key that a 401 made us re-read, and that came back unchanged,
// is trusted before another 401 reads it again: the upstream refusing a key the store still
// holds is a revoked key, not a rotation, and every request would otherwise cost a read.
const RefetchAfter = 30 * time.Second

// Fetch reads the current key; what it returns is a secret.
type Fetch func(ctx context.Context) (string, error)

// Source is one policy's key: cached, refreshed after a 401. Safe for concurrent use.
type Source struct {
	fetch Fetch
	now   func() time.Time
	// reading admits one key read at a time; a refused request waits for it under its own
	// context, and mu is never held across it, so Key() never waits for the store.
	reading chan struct{}

	mu        sync.Mutex
	key       string
	refetched time.Time // when a 401 last made us read the key
	readErr   error     // that read's failure: until the next read, whether the key rotated is unknown
}

// Static is a key that never changes (read from the environment).
func Static(key string) *Source { return &Source{key: key} }

// New reads the key once, now: a worker whose key cannot be read fails at start, not on
// its first step.
func New(ctx context.Context, fetch Fetch) (*Source, error) {
	key, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	return &Source{fetch: fetch, key: key, now: time.Now, reading: make(chan struct{}, 1)}, nil
}

// Key is the cached key.
func (s *Source) Key() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}

// Rejected is told that the upstream answered 401 to stale. It returns the key to send
// next and whether it differs from stale (only then is a retry worth it). Requests refused
// the same key share one read: the first reads while the others wait, and they get its
// result without reading again.
func (s *Source) Rejected(ctx context.Context, stale string) (string, bool, error) {
	if s.fetch == nil {
		return s.Key(), false, nil
	}
	select {
	case s.reading <- struct{}{}:
		defer func() { <-s.reading }()
	case <-ctx.Done():
		return s.Key(), false, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != stale {
		return s.key, true, nil // another request already read the new key
	}
	if !s.refetched.IsZero() && s.now().Sub(s.refetched) < RefetchAfter {
		return s.key, false, s.readErr
	}
	s.refetched = s.now()
	s.mu.Unlock()
	key, err := s.fetch(ctx)
	s.mu.Lock()
	if s.readErr = err; err != nil {
		return s.key, false, err
	}
	if key != stale {
		// A rotation: the new key has not been refused yet, so its first 401 reads again.
		s.key, s.refetched = key, time.Time{}
		return key, true, nil
	}
	return key, false, nil
}

// SecretsAPI is the Secrets Manager call a secret source makes.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// ParametersAPI is the SSM call a parameter source makes.
type ParametersAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// FromSecret reads secret id (a name or an ARN), its current version: the whole
// SecretString, or its field jsonKey when the string is a JSON object.
func FromSecret(api SecretsAPI, id, jsonKey string) Fetch {
	return func(ctx context.Context) (string, error) {
		out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			return "", fmt.Errorf("reading secret %s: %w", id, err)
		}
		if out.SecretString == nil {
			return "", fmt.Errorf("secret %s has no SecretString (a binary secret cannot hold an API key)", id)
		}
		return pick("secret "+id, *out.SecretString, jsonKey)
	}
}

// FromParameter reads SSM parameter name (a name or an ARN), decrypted.
func FromParameter(api ParametersAPI, name string) Fetch {
	return func(ctx context.Context) (string, error) {
		out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", fmt.Errorf("reading parameter %s: %w", name, err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return "", fmt.Errorf("parameter %s has no value", name)
		}
		return pick("parameter "+name, *out.Parameter.Value, "")
	}
}

// errNotObject is returned for a json_key on a string that is not a JSON object; the
// decoder's own error is dropped, as it may quote the content.
var errNotObject = errors.New("is not a JSON object")

// pick returns the key held in value: value itself, or its field jsonKey. Errors name
// what (the secret or parameter), never the value.
func pick(what, value, jsonKey string) (string, error) {
	if jsonKey != "" {
		var fields map[string]any
		if json.Unmarshal([]byte(value), &fields) != nil {
			return "", fmt.Errorf("%s: json_key %s: the secret string %w", what, jsonKey, errNotObject)
		}
		s, ok := fields[jsonKey].(string)
		if !ok {
			return "", fmt.Errorf("%s: json_key %s: no such string field in the secret's JSON", what, jsonKey)
		}
		value = s
	}
	if value = strings.TrimSpace(value); value == "" {
		return "", fmt.Errorf("%s holds an empty key", what)
	}
	return value, nil
}

// Region is the region named by an ARN (arn:partition:service:region:…), or "" for a
// name, which lives in the worker's own region.
func Region(ref string) string {
	parts := strings.SplitN(ref, ":", 5)
	if len(parts) < 5 || parts[0] != "arn" {
		return ""
	}
	return parts[3]
}
