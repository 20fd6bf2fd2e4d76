package terraform

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/claimcheck"
)

// TestClaimCheckWritesInOwnPrefix (issue 7 item 8): every key fleet-worker writes for a class
// lies under the prefix its role may write to, whatever the work key or lease token, and the
// prefix of one class never covers another's ("a" vs "ab").
func TestClaimCheckWritesInOwnPrefix(t *testing.T) {
	for _, class := range []string{"a", "ab", "research-agent", "c_1"} {
		a := &ir.Agent{Name: class}
		for _, work := range []string{"", "arn:aws:states:::execution:x/y", "trace/../../other"} {
			for _, owner := range []string{"", "lease-1", "../b"} {
				key := claimcheck.OutputKey(class, work, owner)
				// outputs/<class>/<hash>/<owner>.json: no work key or owner adds a level.
				if !strings.HasPrefix(key, ir.ClaimCheckOutputPrefix(a)) || strings.Count(key, "/") != 3 {
					t.Errorf("class %s writes %q outside %q", class, key, ir.ClaimCheckOutputPrefix(a))
				}
				if other := (&ir.Agent{Name: class + "b"}); strings.HasPrefix(key, ir.ClaimCheckOutputPrefix(other)) {
					t.Errorf("class %s's key %q is inside class %s's prefix", class, key, other.Name)
				}
			}
		}
	}
}
