package deploy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// recorder is an HTTP(S) proxy that refuses everything and remembers where each request
// wanted to go. Go's clients (Terraform's AWS provider among them) send every request to a
// host that is not loopback through HTTPS_PROXY / HTTP_PROXY, and loopback never: so what it
// records is exactly what left the machine's loopback.
type recorder struct {
	mu      sync.Mutex
	hosts   []string
	sawAWS  sync.Once
	awsSeen chan struct{} // closed at the first request for an AWS host
}

func newRecorder() *recorder { return &recorder{awsSeen: make(chan struct{})} }

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.Method+" "+req.Host)
	r.mu.Unlock()
	if isAWSHost(req.Host) {
		r.sawAWS.Do(func() { close(r.awsSeen) })
	}
	http.Error(w, "fleetc test: no request may leave loopback", http.StatusForbidden)
}

func isAWSHost(host string) bool { return strings.Contains(host, ".amazonaws.com") }

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.hosts...)
}

// TestEmulatorPlanSendsNothingOffLoopback: `fleetc plan --endpoint` with a named profile in
// the environment plans against kumo with the real Terraform and AWS provider, and no request
// goes anywhere but loopback, the profile never used. The control run, the same
// configuration without the override and the SDK fallback, shows the proxy sees what leaks.
func TestEmulatorPlanSendsNothingOffLoopback(t *testing.T) {
	t.Parallel() // an emulator loop: see environWith
	ctx := context.Background()
	k := newKumoRig(ctx, t)
	bin, endpoint, tmp, rc := k.bin, k.endpoint, k.dir, k.cliConfig

	rec := newRecorder()
	proxy := httptest.NewServer(rec)
	defer proxy.Close()
	// A profile whose use leaves a mark: its credential_process creates used.
	used := filepath.Join(tmp, "used")
	awsConfig := filepath.Join(tmp, "aws-config")
	if err := os.WriteFile(awsConfig, []byte(fmt.Sprintf("[profile prod-admin]\ncredential_process = sh -c 'touch %s; exit 1'\nregion = us-east-1\n", used)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator's shell: terraform starts from it, as from os.Environ() in fleetc plan.
	environ := environWith(map[string]string{
		"TF_CLI_CONFIG_FILE": rc, EnvEndpoint: "",
		"HTTPS_PROXY": proxy.URL, "https_proxy": proxy.URL, "HTTP_PROXY": proxy.URL, "http_proxy": proxy.URL,
		"NO_PROXY": "", "no_proxy": "",
		"AWS_PROFILE": "prod-admin", "AWS_CONFIG_FILE": awsConfig, "AWS_SESSION_TOKEN": "real-session",
	})

	src, err := os.ReadFile("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(tmp, "fleet.yaml")
	name := fmt.Sprintf("lb%d", time.Now().UnixNano()%1_000_000_000)
	if err := os.WriteFile(specPath, []byte(strings.ReplaceAll(string(src), "FLEET", name)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	w, _, err := Prepare(ctx, Options{Spec: specPath, Dir: filepath.Join(tmp, "out"), TerraformBin: bin, Endpoint: endpoint, Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Plan(ctx, filepath.Join(tmp, "plan.tfplan"), false); err != nil {
		t.Fatalf("plan against kumo: %v", err)
	}
	if hosts := rec.seen(); len(hosts) > 0 {
		t.Errorf("requests left loopback during an emulator plan: %v", hosts)
	}
	if _, err := os.Stat(used); err == nil {
		t.Error("the named profile's credential_process ran during an emulator plan")
	}

	// Control: without the override and the SDK fallback, the provider's first call (STS
	// GetCallerIdentity) goes to AWS, through the proxy.
	if err := os.Remove(filepath.Join(w.TFDir, OverrideFile)); err != nil {
		t.Fatal(err)
	}
	env := terraformEnv(environ, endpoint)
	delete(env, "AWS_ENDPOINT_URL")
	env["AWS_MAX_ATTEMPTS"] = "1"
	tf, err := tfexec.NewTerraform(w.TFDir, bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.SetEnv(env); err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Minute)
	defer ccancel()
	// The provider retries the refused call with backoff until the timeout (minutes): its
	// first call through the proxy is what the control shows, so the plan stops there.
	go func() {
		select {
		case <-rec.awsSeen:
			ccancel()
		case <-cctx.Done():
		}
	}()
	if _, err := tf.Plan(cctx); err == nil {
		t.Error("control: a plan for AWS with dummy credentials succeeded")
	}
	leaked := false
	for _, h := range rec.seen() {
		leaked = leaked || isAWSHost(h)
	}
	if !leaked {
		t.Errorf("control: the proxy saw no AWS request (%v); the test cannot see a leak", rec.seen())
	}
}
