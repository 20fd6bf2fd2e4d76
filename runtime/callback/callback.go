// Package callback closes Step Functions task-token callbacks
// (.waitForTaskToken): SendTaskSuccess, SendTaskFailure and
// SendTaskHeartbeat.
//
// A token is stale when the task already timed out (Step Functions then
// issues a new token to the retried state), was already closed, or never
// existed. The API answers TaskTimedOut, InvalidToken or TaskDoesNotExist;
// every method here maps those to an error matching ErrStaleToken
// (errors.Is). A stale token is final: the worker logs it and deletes the
// message, because the state it would close is no longer owned by this
// delivery and retrying can never succeed. Any other error (throttling,
// network) is returned unchanged and is retryable by the queue.
package callback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/fleetc/fleetc/schemas/awslimits"
)

// Step Functions limits on callback arguments.
const (
	// MaxOutputBytes is the SendTaskSuccess output cap (256 KiB, the
	// state payload cap); larger results must go through claim-check.
	MaxOutputBytes = awslimits.SFNMaxPayloadBytes
	// MaxErrorChars and MaxCauseChars are SendTaskFailure's field caps.
	MaxErrorChars = awslimits.SFNTaskFailureErrorChars
	MaxCauseChars = awslimits.SFNTaskFailureCauseChars
)

// ErrStaleToken matches (errors.Is) every error caused by a stale,
// timed-out or unknown task token.
var ErrStaleToken = errors.New("callback: stale task token")

// StaleTokenError carries the API error code behind a stale token.
type StaleTokenError struct {
	Op   string // "SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat"
	Code string // "TaskTimedOut", "InvalidToken" or "TaskDoesNotExist"
	Err  error
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("callback: %s: stale task token (%s): %v", e.Op, e.Code, e.Err)
}

// Is makes errors.Is(err, ErrStaleToken) true.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

func (e *StaleTokenError) Unwrap() error { return e.Err }

// staleCodes are the API error codes that mean the token can never be used.
var staleCodes = map[string]bool{
	"TaskTimedOut":     true,
	"InvalidToken":     true,
	"TaskDoesNotExist": true,
}

// ErrInvalidOutput means SendTaskSuccess can never accept this output (not
// JSON, over the size cap, or the API's InvalidOutput): retrying is futile.
var ErrInvalidOutput = errors.New("callback: invalid task output")

// classify wraps err as a StaleTokenError when its API code is a stale one,
// and marks InvalidOutput as ErrInvalidOutput.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && staleCodes[apiErr.ErrorCode()] {
		return &StaleTokenError{Op: op, Code: apiErr.ErrorCode(), Err: err}
	}
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "InvalidOutput" {
		return fmt.Errorf("callback: %s: %w: %w", op, ErrInvalidOutput, err)
	}
	return fmt.Errorf("callback: %s: %w", op, err)
}

// API is the subset of *sfn.Client the callbacks use.
type API interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
	SendTaskHeartbeat(ctx context.Context, in *sfn.SendTaskHeartbeatInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskHeartbeatOutput, error)
}

// Client sends task-token callbacks.
type Client struct {
	API API
}

// New returns a Client.
func New(api API) *Client { return &Client{API: api} }

// Success resumes the execution with output, which must be a JSON value
// of at most MaxOutputBytes.
func (c *Client) Success(ctx context.Context, token string, output []byte) error {
	if token == "" {
		return errors.New("callback: empty task token")
	}
	if !json.Valid(output) {
		return fmt.Errorf("%w: SendTaskSuccess output is not valid JSON", ErrInvalidOutput)
	}
	if len(output) > MaxOutputBytes {
		return fmt.Errorf("%w: output is %d bytes, over the %d-byte Step Functions cap; offload it with claimcheck and send the reference", ErrInvalidOutput, len(output), MaxOutputBytes)
	}
	_, err := c.API.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(output))})
	return classify("SendTaskSuccess", err)
}

// Failure fails the task with errorCode and cause (truncated to the API's
// caps), so the state's Catch/Retry rules see errorCode.
func (c *Client) Failure(ctx context.Context, token, errorCode, cause string) error {
	if token == "" {
		return errors.New("callback: empty task token")
	}
	_, err := c.API.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{
		TaskToken: aws.String(token),
		Error:     aws.String(truncate(errorCode, MaxErrorChars)),
		Cause:     aws.String(truncate(cause, MaxCauseChars)),
	})
	return classify("SendTaskFailure", err)
}

// Heartbeat resets the task's HeartbeatSeconds clock.
func (c *Client) Heartbeat(ctx context.Context, token string) error {
	if token == "" {
		return errors.New("callback: empty task token")
	}
	_, err := c.API.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	return classify("SendTaskHeartbeat", err)
}

// StartHeartbeat sends a heartbeat every interval until stop is called or
// ctx ends. onErr (may be nil) sees each failed heartbeat; after a stale
// token the loop stops by itself, since no later heartbeat can succeed.
// stop waits for the loop to exit and is safe to call more than once.
func (c *Client) StartHeartbeat(ctx context.Context, token string, interval time.Duration, onErr func(error)) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				err := c.Heartbeat(ctx, token)
				if err != nil && ctx.Err() == nil && onErr != nil {
					onErr(err)
				}
				if errors.Is(err, ErrStaleToken) {
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// truncate cuts s to at most n characters without splitting a rune.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
