package verifytest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// KumoEndpoint is where tools/kumo/start.sh runs the kumo AWS emulator. It must be this
// address: kumo calls itself there when Step Functions sends to SQS or EventBridge delivers to SQS.
const KumoEndpoint = "http://127.0.0.1:4566"

// Kumo returns KumoEndpoint when kumo answers GET /health, else an error wrapping
// ErrToolMissing that says how to start it. Point aws-sdk-go-v2 clients at it with
// BaseEndpoint and static dummy credentials.
func Kumo(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, KumoEndpoint+"/health", nil)
	if err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: kumo not answering at %s (%v); start it with: bash tools/install.sh kumo && bash tools/kumo/start.sh", ErrToolMissing, KumoEndpoint, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "healthy") {
		return "", fmt.Errorf("%w: %s/health answered %d %q, not kumo's {\"status\":\"healthy\"}; start kumo with: bash tools/kumo/start.sh", ErrToolMissing, KumoEndpoint, resp.StatusCode, body)
	}
	return KumoEndpoint, nil
}
