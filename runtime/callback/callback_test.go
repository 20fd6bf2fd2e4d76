package callback

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
)

// fakeAPI records calls and answers with err. kumo never returns
// InvalidToken, so that code is covered here.
type fakeAPI struct {
	err      error
	failures []*sfn.SendTaskFailureInput
	success  int
}

func (f *fakeAPI) SendTaskSuccess(context.Context, *sfn.SendTaskSuccessInput, ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	f.success++
	return &sfn.SendTaskSuccessOutput{}, f.err
}

func (f *fakeAPI) SendTaskFailure(_ context.Context, in *sfn.SendTaskFailureInput, _ ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	f.failures = append(f.failures, in)
	return &sfn.SendTaskFailureOutput{}, f.err
}

func (f *fakeAPI) SendTaskHeartbeat(context.Context, *sfn.SendTaskHeartbeatInput, ...func(*sfn.Options)) (*sfn.SendTaskHeartbeatOutput, error) {
	return &sfn.SendTaskHeartbeatOutput{}, f.err
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err   error
		stale bool
	}{
		{&sfntypes.InvalidToken{Message: aws.String("bad")}, true},
		{&sfntypes.TaskTimedOut{Message: aws.String("late")}, true},
		{&sfntypes.TaskDoesNotExist{Message: aws.String("gone")}, true},
		{&smithy.GenericAPIError{Code: "TaskTimedOut"}, true}, // code-string only, as kumo may answer
		{&smithy.GenericAPIError{Code: "ThrottlingException"}, false},
		{errors.New("connection reset"), false},
	} {
		api := &fakeAPI{err: tc.err}
		err := New(api).Success(context.Background(), "tok", []byte(`{}`))
		if errors.Is(err, ErrStaleToken) != tc.stale {
			t.Errorf("%v: stale=%v, want %v", tc.err, !tc.stale, tc.stale)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v: original error not wrapped: %v", tc.err, err)
		}
	}
}

func TestSuccessValidates(t *testing.T) {
	api := &fakeAPI{}
	c := New(api)
	if err := c.Success(context.Background(), "tok", []byte(`not json`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	big := []byte(`"` + strings.Repeat("x", MaxOutputBytes) + `"`)
	if err := c.Success(context.Background(), "tok", big); err == nil || !strings.Contains(err.Error(), "claimcheck") {
		t.Fatalf("oversize output: %v", err)
	}
	if err := c.Success(context.Background(), "", []byte(`{}`)); err == nil {
		t.Fatal("empty token accepted")
	}
	if api.success != 0 {
		t.Fatalf("API called %d times for invalid input", api.success)
	}
}

func TestFailureTruncates(t *testing.T) {
	api := &fakeAPI{}
	errCode := strings.Repeat("é", MaxErrorChars+10)
	cause := strings.Repeat("c", MaxCauseChars+1)
	if err := New(api).Failure(context.Background(), "tok", errCode, cause); err != nil {
		t.Fatal(err)
	}
	in := api.failures[0]
	if n := utf8.RuneCountInString(aws.ToString(in.Error)); n != MaxErrorChars || !utf8.ValidString(aws.ToString(in.Error)) {
		t.Fatalf("error len %d", n)
	}
	if n := len(aws.ToString(in.Cause)); n != MaxCauseChars {
		t.Fatalf("cause len %d", n)
	}
}

// Outputs SendTaskSuccess can never take are ErrInvalidOutput, so the worker
// dead-letters them instead of retrying forever; throttling is not.
func TestInvalidOutputIsPermanent(t *testing.T) {
	c := New(&fakeAPI{})
	big := []byte(`"` + strings.Repeat("x", MaxOutputBytes) + `"`)
	for _, out := range [][]byte{[]byte(`not json`), big} {
		if err := c.Success(context.Background(), "tok", out); !errors.Is(err, ErrInvalidOutput) {
			t.Errorf("local check: %v, want ErrInvalidOutput", err)
		}
	}
	apiErr := &sfntypes.InvalidOutput{Message: aws.String("bad output")}
	if err := New(&fakeAPI{err: apiErr}).Success(context.Background(), "tok", []byte(`{}`)); !errors.Is(err, ErrInvalidOutput) || !errors.Is(err, apiErr) || errors.Is(err, ErrStaleToken) {
		t.Errorf("InvalidOutput from the API: %v", err)
	}
	thr := &smithy.GenericAPIError{Code: "ThrottlingException"}
	if err := New(&fakeAPI{err: thr}).Success(context.Background(), "tok", []byte(`{}`)); errors.Is(err, ErrInvalidOutput) {
		t.Errorf("throttling marked permanent: %v", err)
	}
}
