package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/worker"
)

// secretsCheck is an exec handler that says on stderr, per variable, whether its
// environment holds the value the test wrote to <dir>/<NAME> (the command never prints a
// value), and succeeds only when all do: the test sees what the command got without the
// value passing through anything but the command's environment.
func secretsCheck(dir string, names ...string) []string {
	script := "ok=0\n"
	for _, n := range names {
		script += fmt.Sprintf(`if [ -n "$%[1]s" ] && [ "$%[1]s" = "$(cat %[2]q)" ]; then echo "%[1]s matches" >&2; else echo "%[1]s differs" >&2; ok=65; fi`+"\n", n, filepath.Join(dir, n))
	}
	return []string{"sh", "-c", script + `echo '{}'; exit $ok`}
}

// startObservedWorker starts a poll worker on e's config, on kumo, with its logs and spans
// captured in memory (read them before the test's cleanup: the exporter forgets its spans on
// Shutdown).
func startObservedWorker(t *testing.T, e *env) (logs *bytes.Buffer, spans *tracetest.InMemoryExporter, stop func()) {
	t.Helper()
	logs, spans = &bytes.Buffer{}, tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(telemetry.Options{ServiceName: "test-researcher", Class: "researcher", LogWriter: logs, SpanExporter: spans, SyncExport: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := *e.cfg
	w, err := worker.Build(context.Background(), &cfg, worker.BuildOptions{
		Getenv: e.getenv, Logger: tel.Logger, Telemetry: tel,
		AWSOptions: awsconfig.Options{Endpoint: kumotest.Endpoint, Region: kumotest.Region, Counter: e.counter,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.RunPoll(ctx, 5*time.Second); w.Close(context.Background()) }()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return logs, spans, func() { cancel(); <-done }
}

// An exec handler declaring handler.secrets gets VENDOR_TOKEN from a field of a JSON secret
// in kumo's Secrets Manager and SEARCH_KEY from an SSM SecureString parameter, read once at
// start; a restart after PutSecretValue reads the new value; a variable of the same name in
// the worker's environment (fleetc dev: the developer's shell) wins without a read. No value
// reaches the worker's logs, its spans or its runtime config.
func TestExecHandlerSecretsFromSecretsManagerAndSSM(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{maxAttempts: 1, maxReceives: 1})
	awsCfg := kumotest.Require(t)
	sm, params := secretsmanager.NewFromConfig(awsCfg), ssm.NewFromConfig(awsCfg)
	name, param := kumotest.Name(t, "vendor"), "/"+kumotest.Name(t, "fleet")+"/search-key"
	token1, token2, search, local := "tok-one-"+name, "tok-two-"+name, "srch-"+name, "tok-local-"+name
	secretJSON := func(v string) *string { return aws.String(fmt.Sprintf(`{"token":%q}`, v)) }
	if _, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: secretJSON(token1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := params.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(param), Value: aws.String(search),
		Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	expect := func(n, v string) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.cfg.Handler = config.Handler{Type: config.HandlerExec, Command: secretsCheck(dir, "VENDOR_TOKEN", "SEARCH_KEY"),
		Secrets: map[string]config.APIKey{"VENDOR_TOKEN": {Secret: name, JSONKey: "token"}, "SEARCH_KEY": {SSM: param}}}
	var seen strings.Builder
	run := func(key string, wantReads int64) {
		t.Helper()
		logs, spans, stop := startObservedWorker(t, e)
		e.send(envelope("evt-"+key, stepSpec{TraceID: key}), "")
		deadline := time.Now().Add(30 * time.Second)
		for e.record(key) != "done" && len(e.drainDLQ()) == 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		for _, want := range []string{"VENDOR_TOKEN matches", "SEARCH_KEY matches"} {
			if !strings.Contains(logs.String(), want) {
				t.Fatalf("step %s: the handler did not say %q; its log:\n%s", key, want, logs.String())
			}
		}
		if got := e.record(key); got != "done" {
			t.Fatalf("step %s: record %q, want done", key, got)
		}
		if n := e.counter.Count("secretsmanager"); n != wantReads {
			t.Fatalf("after step %s: %d secret reads, want %d", key, n, wantReads)
		}
		seen.Write(logs.Bytes())
		for _, s := range spans.GetSpans() {
			b, _ := json.Marshal(s.Attributes)
			ev, _ := json.Marshal(s.Events)
			fmt.Fprintf(&seen, "%s %s %s %s\n", s.Name, s.Status.Description, b, ev)
		}
	}

	expect("VENDOR_TOKEN", token1)
	expect("SEARCH_KEY", search)
	run("sec-1", 1)
	if n := e.counter.Count("ssm"); n != 1 {
		t.Fatalf("%d parameter reads at start, want 1", n)
	}

	// A restart reads the rotated secret.
	if _, err := sm.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(name), SecretString: secretJSON(token2)}); err != nil {
		t.Fatal(err)
	}
	expect("VENDOR_TOKEN", token2)
	run("sec-2", 2)

	// The worker's own environment wins (fleetc dev): no read of that secret.
	e.extraEnv = map[string]string{"VENDOR_TOKEN": local}
	expect("VENDOR_TOKEN", local)
	run("sec-3", 2)

	cfgJSON, _ := json.Marshal(e.cfg)
	seen.Write(cfgJSON)
	if len(seen.String()) == 0 || !strings.Contains(string(cfgJSON), name) {
		t.Fatalf("nothing recorded, or the runtime config lost the secret's reference: %s", cfgJSON)
	}
	for _, v := range []string{token1, token2, search, local} {
		if strings.Contains(seen.String(), v) {
			t.Fatalf("a secret value leaked into logs, spans or the runtime config:\n%s", seen.String())
		}
	}
}
