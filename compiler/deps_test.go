package compiler_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCompilePathLinksNoRuntime holds what keeps `fleetc build` starting fast: every package
// linked into a program runs its initializers at start-up, whatever the command, and the
// worker runtime's libraries are the heavy ones (the AWS SDK's per-service schema tables,
// Prometheus, OpenTelemetry, gRPC, protobuf). The compiler shares names with the runtime
// through leaf packages (runtime/telemetry/metric, runtime/events/putevents, runtime/wire),
// never by importing a runtime package that links those.
func TestCompilePathLinksNoRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	banned := []string{
		"github.com/aws/aws-sdk-go-v2/service/",
		"github.com/prometheus/",
		"go.opentelemetry.io/",
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(dep, b) {
				t.Errorf("compiler links %s (prefix %s)", dep, b)
			}
		}
	}
}
