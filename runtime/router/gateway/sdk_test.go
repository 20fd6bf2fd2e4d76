package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// clientsDir holds the npm clients tools/install.sh installs (gateway-clients).
const clientsDir = "../../../tools/gateway-clients"

// rateLimitClient is the openai SDK with one retry: it prints what it raised and how long
// the call took, retry included.
const rateLimitClient = `import OpenAI from "openai";
const c = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 1 });
const t0 = Date.now();
try {
  await c.chat.completions.create({ model: "p", messages: [{ role: "user", content: "x" }] });
  console.log(JSON.stringify({ answered: true }));
} catch (e) {
  console.log(JSON.stringify({ rateLimitError: e instanceof OpenAI.RateLimitError, status: e.status, code: e.code, ms: Date.now() - t0 }));
}`

// The openai SDK, run by Node against the gateway, sees a throttle as what it is: it waits
// the gateway's retry-after-ms, which is the router's real bench, comes back just as the
// bench ends (so its retry reaches the upstream again), and raises RateLimitError when the
// upstream is still limited. The upstream imitates OpenAI's rate-limit 429
// (rate_limit_exceeded, retry-after-ms 2050) on every call.
func TestOpenAISDKWaitsTheRetryAfterThenRaisesRateLimitError(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(clientsDir, "node_modules", "openai"))
	}
	if err != nil {
		if os.Getenv("FLEETC_REQUIRE_TOOLS") == "1" {
			t.Fatalf("the gateway clients are required: bash tools/install.sh gateway-clients (%v)", err)
		}
		t.Skipf("gateway clients not installed (bash tools/install.sh gateway-clients): %v", err)
	}
	limited := rt.OpenAI(t, "", rt.Always(rt.Reply{Status: 429, ErrorCode: "rate_limit_exceeded", RetryAfterMs: "2050"}))
	r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "p", Model: "m", Provider: rt.OpenAIProvider(limited, "")}},
		Timeout: 2 * time.Second, AllowedFails: 0, Cooldown: time.Minute}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(r, "p", "127.0.0.1:0", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())

	cmd := exec.Command(node, "--input-type=module", "-e", rateLimitClient)
	cmd.Dir = clientsDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + gw.URL() + "/v1", "OPENAI_API_KEY=" + gw.Token()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v %s", err, out)
	}
	var got struct {
		Answered, RateLimitError bool
		Status                   int
		Code                     string
		Ms                       int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %s: %v", out, err)
	}
	t.Logf("openai SDK: %s", out)
	if !got.RateLimitError || got.Status != 429 || got.Code != "rate_limit_exceeded" {
		t.Errorf("the SDK raised %+v, want RateLimitError 429 rate_limit_exceeded", got)
	}
	// It waited retry-after-ms (2.05 s; Retry-After alone, rounded up, says 3 s), and its retry
	// came after the bench had ended: the upstream saw both calls (a retry inside the bench is
	// answered without a call). The wait is the gap between the upstream's two arrivals, so a
	// loaded machine's slow Node start and first request do not count toward the 3 s bound.
	at := limited.Arrivals()
	if len(at) != 2 {
		t.Fatalf("the upstream got %d calls, want 2", len(at))
	}
	if gap := at[1].Sub(at[0]); got.Ms < 2050 || gap < 2050*time.Millisecond || gap >= 3*time.Second {
		t.Errorf("the SDK took %d ms and retried %s after its first call; want at least 2050 ms and a retry 2050-3000 ms later (retry-after-ms)", got.Ms, gap)
	}
}
