package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFleetcLinksNoWorkerRuntime holds what keeps every fleetc command's start-up small: Go
// runs the initializers of every linked package before main, whatever the command, and the
// worker runtime's libraries are heavy (the OpenTelemetry SDK, OTLP over gRPC, protobuf,
// Prometheus, the Bedrock Runtime client). fleetc dev's pieces that speak the worker's wire
// formats import leaf packages (runtime/lambda/sqsevent, runtime/router/bedrock/converse,
// runtime/router/gateway/gatewayenv), never the runtime behind them.
func TestFleetcLinksNoWorkerRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	// Third-party modules, by prefix.
	banned := []string{
		"github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
		"github.com/prometheus/",
		"go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/proto/",
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
	}
	// The runtime packages themselves (their leaf subpackages are fine).
	runtime := map[string]bool{}
	for _, p := range []string{"worker", "step", "lambda", "telemetry", "router", "router/bedrock", "router/gateway"} {
		runtime["github.com/fleetc/fleetc/runtime/"+p] = true
	}
	for _, dep := range strings.Fields(string(out)) {
		if runtime[dep] {
			t.Errorf("fleetc links %s", dep)
		}
		for _, b := range banned {
			if strings.HasPrefix(dep, b) {
				t.Errorf("fleetc links %s (prefix %s)", dep, b)
			}
		}
	}
}
