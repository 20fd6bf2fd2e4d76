package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

// keyedUpstream is an OpenAI-compatible endpoint that accepts one bearer key at a time and
// answers any other as OpenAI does (documented 401, code invalid_api_key, the message
// quoting the key's first and last characters).
type keyedUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	valid string
	seen  []string // the bearer keys of every call, in order
}

func newKeyedUpstream(t *testing.T, valid string) *keyedUpstream {
	u := &keyedUpstream{valid: valid}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("upstream got %s %s", r.Method, r.URL.Path)
		}
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		u.mu.Lock()
		u.seen = append(u.seen, key)
		ok := key == u.valid
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, masked(key))
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// masked is how OpenAI quotes a refused key: its first 8 and last 4 characters.
func masked(key string) string {
	if len(key) < 12 {
		return key
	}
	return key[:8] + strings.Repeat("*", len(key)-12) + key[len(key)-4:]
}

func (u *keyedUpstream) accept(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.valid = key
}

func (u *keyedUpstream) calls() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// keyedLLMWorker runs an llm class whose only policy is openai/gpt-test on up, keyed by
// key, with its logs and spans captured; it returns them once the test's steps ran.
func keyedLLMWorker(t *testing.T, e *env, up *keyedUpstream, key *config.APIKey) (logs *bytes.Buffer, spans *tracetest.InMemoryExporter, stop func()) {
	prompt := filepath.Join(t.TempDir(), "researcher.md")
	os.WriteFile(prompt, []byte("You are the researcher."), 0o644)
	e.cfg.Handler = config.Handler{Type: config.HandlerLLM, System: prompt, MaxTokens: 64, MaxIterations: 2}
	e.cfg.Models = config.Models{Policy: "keyed", Policies: map[string]config.ModelPolicy{
		"keyed": {Targets: []string{"openai/gpt-test"}, BaseURL: up.URL + "/v1", APIKeyEnv: "UNSET_IN_A_DEPLOYED_FUNCTION", APIKey: key,
			Fallbacks: []string{}, Retries: 0, TimeoutSeconds: 5, AllowedFails: 100, CooldownSeconds: 1, MaxInFlight: 4},
	}}
	return startObservedWorker(t, e)
}

// waitDone waits until every key's record is done, or fails.
func (e *env) waitDone(keys ...string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, k := range keys {
		for e.record(k) != "done" {
			if time.Now().After(deadline) {
				e.t.Fatalf("step %s did not complete: %q", k, e.record(k))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// kumo serves both Secrets Manager and SSM (CreateSecret, PutSecretValue, GetSecretValue,
// PutParameter, GetParameter WithDecryption were checked against it), so these tests need no
// other emulator.

// An llm worker whose policy names api_key: {secret, json_key} (and an api_key_env that a
// deployed function does not set) reads its key from kumo's Secrets Manager at start and
// calls the upstream with it. After PutSecretValue rotates the key, the upstream's 401 makes
// it read the secret once and retry with the new key, without a restart. A key the upstream
// revokes while the secret still holds it costs one more read for the whole burst of 401s,
// not one per request. Through all of it, no key (nor OpenAI's masked quote of it) reaches
// the worker's logs, its spans or its dead letters.
func TestLLMKeyFromSecretsManagerRotatesOn401(t *testing.T) {
	e := newEnv(t, envOpts{maxAttempts: 1, maxReceives: 1})
	sm := secretsmanager.NewFromConfig(kumotest.Require(t))
	name := kumotest.Name(t, "openai")
	first, second := "sk-first-"+name+"-a1b2", "sk-second-"+name+"-c3d4"
	put := func(key string) string { return fmt.Sprintf(`{"api_key":%q,"org":"o-1"}`, key) }
	if _, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(put(first))}); err != nil {
		t.Fatal(err)
	}
	up := newKeyedUpstream(t, first)
	logs, spans, stop := keyedLLMWorker(t, e, up, &config.APIKey{Secret: name, JSONKey: "api_key"})
	reads := func() int64 { return e.counter.Count("secretsmanager") }
	if n := reads(); n != 1 {
		t.Fatalf("%d secret reads at start, want 1", n)
	}

	e.send(envelope("evt-key-1", stepSpec{TraceID: "key-1"}), "")
	e.waitDone("key-1")
	if got := up.calls(); len(got) != 1 || got[0] != first {
		t.Fatalf("upstream saw keys %q, want the secret's %q", got, first)
	}

	if _, err := sm.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(name), SecretString: aws.String(put(second))}); err != nil {
		t.Fatal(err)
	}
	up.accept(second)
	e.send(envelope("evt-key-2", stepSpec{TraceID: "key-2"}), "")
	e.waitDone("key-2")
	if got := up.calls()[1:]; len(got) != 2 || got[0] != first || got[1] != second {
		t.Fatalf("after rotation the upstream saw %q, want the old key refused then %q", got, second)
	}
	if n := reads(); n != 2 {
		t.Fatalf("%d secret reads after one rotation, want 2", n)
	}

	// Revoked at the upstream, still in the secret: a burst of refused steps, one read.
	up.accept("sk-nobody-has-this")
	for i := range 4 {
		e.send(envelope(fmt.Sprintf("evt-revoked-%d", i), stepSpec{TraceID: fmt.Sprintf("revoked-%d", i)}), "")
	}
	var dead []dlqMessage
	for deadline := time.Now().Add(30 * time.Second); len(dead) < 4 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		dead = append(dead, e.drainDLQ()...)
	}
	stop()
	if len(dead) != 4 {
		t.Fatalf("%d dead letters for 4 refused steps", len(dead))
	}
	if n := reads(); n != 3 {
		t.Fatalf("%d secret reads after a burst of 4 refused steps, want 3 (one for the burst)", n)
	}

	var out strings.Builder
	out.Write(logs.Bytes())
	for _, s := range spans.GetSpans() {
		b, _ := json.Marshal(s.Attributes)
		ev, _ := json.Marshal(s.Events)
		fmt.Fprintf(&out, "%s %s %s %s\n", s.Name, s.Status.Description, b, ev)
	}
	for _, d := range dead {
		fmt.Fprintf(&out, "%s %s\n", d.Code, d.Message)
	}
	if !strings.Contains(out.String(), "401") || len(spans.GetSpans()) == 0 {
		t.Fatalf("nothing recorded the refused calls; logs, spans and dead letters:\n%s", out.String())
	}
	for _, k := range []string{first, second, masked(first), masked(second), first[:8], second[:8]} {
		if strings.Contains(out.String(), k) {
			t.Fatalf("%q leaked into logs, spans or dead letters:\n%s", k, out.String())
		}
	}
}

// The same through an SSM SecureString parameter: read decrypted at start, and a
// PutParameter with Overwrite is picked up on the next 401.
func TestLLMKeyFromSSMParameterRotatesOn401(t *testing.T) {
	e := newEnv(t, envOpts{maxAttempts: 1, maxReceives: 1})
	params := ssm.NewFromConfig(kumotest.Require(t))
	name := "/" + kumotest.Name(t, "fleet") + "/openai-key"
	first, second := "sk-param-one-0001", "sk-param-two-0002"
	put := func(v string) {
		if _, err := params.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(v),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	put(first)
	up := newKeyedUpstream(t, first)
	_, _, stop := keyedLLMWorker(t, e, up, &config.APIKey{SSM: name})
	defer stop()
	e.send(envelope("evt-p-1", stepSpec{TraceID: "p-1"}), "")
	e.waitDone("p-1")
	put(second)
	up.accept(second)
	e.send(envelope("evt-p-2", stepSpec{TraceID: "p-2"}), "")
	e.waitDone("p-2")
	if got := up.calls(); len(got) != 3 || got[0] != first || got[1] != first || got[2] != second {
		t.Fatalf("upstream saw keys %q, want %q, then %q refused and %q", got, first, first, second)
	}
	if n := e.counter.Count("ssm"); n != 2 {
		t.Fatalf("%d parameter reads, want 2 (start, one 401)", n)
	}
}
