package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/keda"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/worker"
)

// EKS Pod Identity, as the AWS documents describe it ("EKS Pod Identity" in the
// Amazon EKS User Guide; "Container credential provider" in the AWS SDKs and
// Tools Reference Guide): the pod identity webhook gives the container
// AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials and
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (a projected service account token); the
// SDK GETs the URI with "Authorization: <token file contents>" and gets
// {"AccessKeyId","SecretAccessKey","Token","AccountId","Expiration"}.
const (
	podIdentityPath      = "/v1/credentials"
	podIdentityTokenFile = "eks-pod-identity-token"
	// The SDK's container credential provider treats credentials as due for
	// refresh this long before their Expiration (aws-sdk-go-v2/config
	// resolveHTTPCredProvider: ExpiryWindow 5 min).
	sdkContainerExpiryWindow = 5 * time.Minute
	// credLife is how long each credential set stays in use: the agent answers
	// Expiration = now + sdkContainerExpiryWindow + credLife.
	credLife = 2 * time.Second
)

// podIdentityAgent stands in for the EKS Pod Identity agent (the DaemonSet on
// 169.254.170.23). It is an httptest server because no local emulator of the
// agent exists; the SDK accepts a loopback host in FULL_URI over http. It asserts
// the exact request and issues a new credential set (generation) per call.
type podIdentityAgent struct {
	t     *testing.T
	token string
	srv   *httptest.Server

	mu     sync.Mutex
	mode   string            // "ok", "500", "drop" (connection closed: the agent unreachable)
	issued []aws.Credentials // one set per successful request
	failed int               // requests answered with 500 or dropped
}

func newPodIdentityAgent(t *testing.T, token string) *podIdentityAgent {
	a := &podIdentityAgent{t: t, token: token, mode: "ok"}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *podIdentityAgent) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != podIdentityPath || r.Header.Get("Authorization") != a.token {
		a.t.Errorf("pod identity agent: got %s %s Authorization=%q, want GET %s with the token file's contents",
			r.Method, r.URL.Path, r.Header.Get("Authorization"), podIdentityPath)
		http.Error(w, `{"message":"invalid request"}`, http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch a.mode {
	case "500":
		a.failed++
		http.Error(w, `{"message":"internal error"}`, http.StatusInternalServerError)
		return
	case "drop":
		a.failed++
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	n := len(a.issued) + 1
	now := time.Now()
	c := aws.Credentials{
		AccessKeyID:     fmt.Sprintf("ASIAPODIDENTITY%05d", n),
		SecretAccessKey: fmt.Sprintf("pod-identity-secret-%d", n),
		SessionToken:    fmt.Sprintf("pod-identity-session-token-%d", n),
		CanExpire:       true,
		Expires:         now.Add(sdkContainerExpiryWindow + credLife).UTC().Truncate(time.Second),
	}
	a.issued = append(a.issued, c)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"AccessKeyId":%q,"SecretAccessKey":%q,"Token":%q,"AccountId":"123456789012","Expiration":%q}`,
		c.AccessKeyID, c.SecretAccessKey, c.SessionToken, c.Expires.Format(time.RFC3339))
}

func (a *podIdentityAgent) setMode(m string) { a.mu.Lock(); a.mode = m; a.mu.Unlock() }

func (a *podIdentityAgent) counts() (issued, failed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.issued), a.failed
}

func (a *podIdentityAgent) lookup(akid string) (aws.Credentials, int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, c := range a.issued {
		if c.AccessKeyID == akid {
			return c, i + 1, true
		}
	}
	return aws.Credentials{}, 0, false
}

// signedRequest is one AWS call the proxy let through.
type signedRequest struct {
	op         string // X-Amz-Target, e.g. AmazonSQS.ReceiveMessage
	generation int    // which agent credential set signed it
	signedAt   time.Time
}

// sigV4Proxy sits between the worker and kumo. Every request must be SigV4-signed
// with a credential set the agent issued (verified by recomputing the signature
// with that set's secret) and carry the set's session token; anything else is
// refused with 403 as AWS would, and fails the test.
type sigV4Proxy struct {
	t     *testing.T
	agent *podIdentityAgent
	srv   *httptest.Server

	mu   sync.Mutex
	seen []signedRequest
}

func newSigV4Proxy(t *testing.T, agent *podIdentityAgent) *sigV4Proxy {
	p := &sigV4Proxy{t: t, agent: agent}
	target, _ := url.Parse(kumotest.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := p.check(r, body)
		if err != nil {
			t.Errorf("proxy: %s %s: %v", r.Method, r.Header.Get("X-Amz-Target"), err)
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"__type":"InvalidSignatureException","message":%q}`, err.Error())
			return
		}
		p.mu.Lock()
		p.seen = append(p.seen, req)
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// check verifies r's SigV4 signature against the agent's credential sets.
func (p *sigV4Proxy) check(r *http.Request, body []byte) (signedRequest, error) {
	auth := r.Header.Get("Authorization")
	fields := map[string]string{}
	algo, rest, _ := strings.Cut(auth, " ")
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if algo != "AWS4-HMAC-SHA256" || len(scope) != 5 {
		return signedRequest{}, fmt.Errorf("not SigV4-signed: Authorization %q", auth)
	}
	creds, gen, ok := p.agent.lookup(scope[0])
	if !ok {
		return signedRequest{}, fmt.Errorf("signed with access key %q, which the Pod Identity agent never issued", scope[0])
	}
	if got := r.Header.Get("X-Amz-Security-Token"); got != creds.SessionToken {
		return signedRequest{}, fmt.Errorf("X-Amz-Security-Token %q, want the agent's Token %q", got, creds.SessionToken)
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return signedRequest{}, fmt.Errorf("X-Amz-Date: %v", err)
	}
	if !signedAt.Before(creds.Expires) {
		return signedRequest{}, fmt.Errorf("signed at %s with credentials that expired at %s (ExpiredToken)", signedAt, creds.Expires)
	}
	// Recompute the signature: same method, URL, signed headers, body and time,
	// signed with the issued secret. A match proves the caller held that secret.
	re, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	signed := strings.Split(fields["SignedHeaders"], ";")
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if !slices.Contains(signed, "x-amz-security-token") {
		return signedRequest{}, fmt.Errorf("X-Amz-Security-Token is not among the signed headers %q", fields["SignedHeaders"])
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, hex.EncodeToString(sum[:]), scope[3], scope[2], signedAt); err != nil {
		return signedRequest{}, err
	}
	if want := re.Header.Get("Authorization"); want != auth {
		return signedRequest{}, fmt.Errorf("signature does not verify with the agent's secret:\n got  %s\n want %s", auth, want)
	}
	return signedRequest{op: r.Header.Get("X-Amz-Target"), generation: gen, signedAt: signedAt}, nil
}

func (p *sigV4Proxy) requests() []signedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]signedRequest(nil), p.seen...)
}

// podIdentityWorker starts the fleet-worker binary the way the generated
// Deployment starts it (keda.DeploymentFor: its args and env), plus what the
// EKS Pod Identity webhook injects. The test-only differences: the config path,
// FLEET_AWS_ENDPOINT (the proxy), a free metrics port, kumo's CRC32 gap, and an
// empty HOME (no ~/.aws). The environment holds no AWS keys.
func podIdentityWorker(t *testing.T, e *env, agentURL, tokenFile, endpoint string) *proc {
	t.Helper()
	cfgBytes, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	f := &ir.Fleet{Name: "test", Region: kumotest.Region}
	a := &ir.Agent{Name: e.cfg.Class, Image: "fleet-worker:test", StepMax: 30 * time.Second,
		K8s: &ir.K8s{Namespace: "agents", Deployment: e.cfg.Class + "-worker", ServiceAccount: e.cfg.Class + "-worker"}}
	c := keda.DeploymentFor(f, a, cfgBytes).Spec.Template.Spec.Containers[0]
	args := append([]string(nil), c.Args...)
	replaced := false
	for i := range args {
		if args[i] == keda.ConfigPath {
			args[i], replaced = e.cfgPath, true
		}
	}
	if !replaced {
		t.Fatalf("generated args %q do not name %s", c.Args, keda.ConfigPath)
	}
	environ := []string{
		// Injected by the EKS Pod Identity webhook (host 169.254.170.23 in a cluster).
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=" + agentURL + podIdentityPath,
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=" + tokenFile,
		// Test plumbing.
		awsconfig.EnvEndpoint + "=" + endpoint,
		worker.EnvDisableDynamoCRC32 + "=true",
		"HOME=" + t.TempDir(),
	}
	for _, ev := range c.Env {
		if ev.Name == keda.EnvMetricsAddr {
			ev.Value = "127.0.0.1:0" // :9090 may be taken on a shared test machine
		}
		environ = append(environ, ev.Name+"="+ev.Value)
	}
	cmd := exec.Command(workerBinary(t), args...)
	cmd.Env = environ
	return startProc(t, cmd)
}

// fleet-worker started as the generated EKS Deployment starts it gets its AWS
// credentials from EKS Pod Identity, signs every SQS and DynamoDB call with them,
// refreshes them ahead of their Expiration, and loses no message while the agent
// fails: the message stays on the queue until credentials come back, then
// completes exactly once.
func TestPodIdentityCredentials(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	if testing.Short() {
		t.Skip("builds fleet-worker and runs it against kumo")
	}
	e := newEnv(t, envOpts{})
	token := "eks-pod-identity-projected-sa-token." + filepath.Base(t.TempDir())
	tokenFile := filepath.Join(t.TempDir(), podIdentityTokenFile)
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := newPodIdentityAgent(t, token)
	proxy := newSigV4Proxy(t, agent)

	var p *proc
	completed := func(key string) func() bool {
		return func() bool {
			select {
			case <-p.done:
				t.Fatalf("fleet-worker exited: %v", p.err)
			default:
			}
			_, done := e.fx.snapshot()
			v, inflight := e.queueDepth(e.queueURL)
			return done[key] == 1 && e.record(key) == "done" && v == 0 && inflight == 0
		}
	}

	// 1. One message end to end with Pod Identity credentials.
	e.send(envelope("evt-pi-1", stepSpec{TraceID: "pi-1"}), "")
	p = podIdentityWorker(t, e, agent.srv.URL, tokenFile, proxy.srv.URL)
	waitFor(t, "pi-1 to complete", 20*time.Second, completed("pi-1"))
	ops := map[string]bool{}
	for _, r := range proxy.requests() {
		ops[r.op] = true
	}
	for _, op := range []string{"AmazonSQS.GetQueueUrl", "AmazonSQS.ReceiveMessage", "AmazonSQS.DeleteMessageBatch", "DynamoDB_20120810.PutItem"} {
		if !ops[op] && !(op == "AmazonSQS.DeleteMessageBatch" && ops["AmazonSQS.DeleteMessage"]) {
			t.Errorf("no %s went through the signing proxy (saw %v)", op, ops)
		}
	}

	// 2. Refresh: each set is due for refresh credLife after issue; the worker,
	// idle-polling, must move to new sets and keep working.
	issuedBefore, _ := agent.counts()
	waitFor(t, "the worker to fetch two more credential sets", 10*credLife+5*time.Second, func() bool {
		n, _ := agent.counts()
		return n >= issuedBefore+2
	})
	e.send(envelope("evt-pi-2", stepSpec{TraceID: "pi-2"}), "")
	waitFor(t, "pi-2 to complete", 20*time.Second, completed("pi-2"))
	gens := map[int]bool{}
	for _, r := range proxy.requests() {
		gens[r.generation] = true
		c, _, _ := agent.lookup(fmt.Sprintf("ASIAPODIDENTITY%05d", r.generation))
		// Signed no later than the set's refresh point (+1 s for X-Amz-Date's
		// whole seconds and scheduling): the worker does not keep using a set
		// the SDK should have replaced.
		if due := c.Expires.Add(-sdkContainerExpiryWindow); r.signedAt.After(due.Add(time.Second)) {
			t.Errorf("%s signed at %s with set %d, due for refresh at %s", r.op, r.signedAt.Format(time.RFC3339), r.generation, due.Format(time.RFC3339))
		}
	}
	if len(gens) < 3 {
		t.Errorf("AWS calls were signed with %d credential sets, want ≥ 3 (refresh)", len(gens))
	}

	// 3. The agent fails (500, then unreachable): no AWS call can be signed, the
	// message waits on the queue untouched, the worker keeps running.
	agent.setMode("500")
	waitFor(t, "a refresh to hit the failing agent", 10*credLife+5*time.Second, func() bool {
		_, failed := agent.counts()
		return failed > 0
	})
	// Outlast any long poll (1 s) signed before the failure.
	time.Sleep(1500 * time.Millisecond)
	before := len(proxy.requests())
	e.send(envelope("evt-pi-3", stepSpec{TraceID: "pi-3"}), "")
	time.Sleep(2 * time.Second)
	agent.setMode("drop")
	_, failed500 := agent.counts()
	waitFor(t, "a refresh to find the agent unreachable", 15*time.Second, func() bool {
		_, failed := agent.counts()
		return failed > failed500
	})
	if calls, _ := e.fx.snapshot(); calls["pi-3"] != 0 {
		t.Errorf("pi-3 ran %d times while the worker had no credentials", calls["pi-3"])
	}
	if v, inflight := e.queueDepth(e.queueURL); v != 1 || inflight != 0 {
		t.Errorf("during the outage the queue holds %d visible / %d in flight, want the message visible", v, inflight)
	}
	if n := len(proxy.requests()); n != before {
		t.Errorf("%d AWS calls reached the proxy during the outage", n-before)
	}
	select {
	case <-p.done:
		t.Fatalf("fleet-worker exited during the agent outage: %v", p.err)
	default:
	}
	if !strings.Contains(p.logs.String(), "receive failed") {
		t.Errorf("the worker logged no failed receive during the outage")
	}

	// 4. The agent recovers: the waiting message completes exactly once.
	agent.setMode("ok")
	waitFor(t, "pi-3 to complete after the agent recovered", 30*time.Second, completed("pi-3"))
	if dead := e.drainDLQ(); len(dead) != 0 {
		t.Errorf("dead-lettered: %+v", dead)
	}
	calls, done := e.fx.snapshot()
	for _, k := range []string{"pi-1", "pi-2", "pi-3"} {
		if calls[k] != 1 || done[k] != 1 {
			t.Errorf("%s: %d handler calls, %d commits; want exactly one", k, calls[k], done[k])
		}
	}

	// SIGTERM, as the kubelet stops a pod: a clean drain.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("fleet-worker exit after SIGTERM: %v", p.err)
		}
	case <-time.After(15 * time.Second):
		t.Error("fleet-worker did not exit within 15 s of SIGTERM")
	}
	issued, failed := agent.counts()
	t.Logf("agent issued %d credential sets, failed %d requests; %d signed AWS calls", issued, failed, len(proxy.requests()))
}
