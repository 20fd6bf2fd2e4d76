package compiler_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// putEventsEntries is what each EventBridge bus resource fleetc could generate accepts per
// PutEvents request. The provider has no EventsV2 resource (issue 7 item 2), so a classic
// bus is the only entry.
var putEventsEntries = map[string]int{"aws_cloudwatch_event_bus": 10}

var busResourceRE = regexp.MustCompile(`(?m)^resource "(aws_[a-z0-9_]*event_bus[a-z0-9_]*)" `)

// TestBatchLimitMatchesGeneratedBus is a cross-artifact check: the PutEvents batch size every
// runtime config hands fleet-worker equals what the bus in the generated Terraform accepts,
// for every example and for generated fleets. A larger batch is refused by PutEvents, which
// the worker treats as permanent, and dead-letters completed work.
func TestBatchLimitMatchesGeneratedBus(t *testing.T) {
	sets := map[string]*artifact.Set{}
	for _, p := range examples(t) {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for env, set := range buildEach(t, p, src) { // each environment is its own fleet
			sets[strings.TrimSuffix(filepath.Base(filepath.Dir(p))+"/"+env, "/")] = set
		}
	}
	for _, n := range []int{4, 40} {
		sets["generated-"+strings.Repeat("x", n/4)] = build(t, "big.yaml", irtest.BigFleet(n))
	}
	for name, set := range sets {
		var buses []string
		configs := 0
		for _, f := range set.Files() {
			if strings.HasPrefix(f.Path, "terraform/") {
				for _, m := range busResourceRE.FindAllSubmatch(f.Bytes, -1) {
					if string(m[1]) != "aws_cloudwatch_event_bus_policy" {
						buses = append(buses, string(m[1]))
					}
				}
			}
		}
		if len(buses) != 1 {
			t.Fatalf("%s: bus resources %v, want exactly one", name, buses)
		}
		accepts, ok := putEventsEntries[buses[0]]
		if !ok {
			t.Fatalf("%s: bus resource %s has no known PutEvents entry limit", name, buses[0])
		}
		for _, f := range set.Files() {
			if !strings.HasPrefix(f.Path, "runtime/") || !strings.HasSuffix(f.Path, ".json") {
				continue
			}
			var cfg struct {
				Events struct {
					BusModel   string `json:"bus_model"`
					MaxEntries int    `json:"max_entries"`
				} `json:"events"`
			}
			if err := json.Unmarshal(f.Bytes, &cfg); err != nil {
				t.Fatalf("%s %s: %v", name, f.Path, err)
			}
			configs++
			if cfg.Events.MaxEntries != accepts || cfg.Events.BusModel != "classic" {
				t.Errorf("%s %s: batches %d entries for a %q bus; the generated %s accepts %d", name, f.Path, cfg.Events.MaxEntries, cfg.Events.BusModel, buses[0], accepts)
			}
		}
		if configs == 0 {
			t.Errorf("%s: no runtime configs", name)
		}
	}
}

// TestV2BusRefused: a v2 bus is refused (E017) and nothing is generated for it.
func TestV2BusRefused(t *testing.T) {
	src := strings.Replace(string(irtest.BigFleet(4)), "bus: { name: big }", "bus: { name: big, model: v2 }", 1)
	_, fleet, ds := compiler.LoadBytes("v2.yaml", []byte(src))
	if fleet == nil || !ds.HasErrors() {
		t.Fatalf("a v2 bus validates: %v", ds)
	}
	found := false
	for _, d := range ds {
		found = found || d.Code == "E017"
	}
	if !found {
		t.Errorf("no E017 for a v2 bus: %v", ds)
	}
}
