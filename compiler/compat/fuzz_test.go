package compat_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// FuzzCompare feeds arbitrary JSON documents to both sides: Compare never panics and an
// identical pair has no findings.
func FuzzCompare(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), []byte(`{"type":"object","additionalProperties":false,"required":["a"]}`))
	f.Add([]byte(`{"definitions":{"n":{"items":{"$ref":"#/definitions/n"}}},"$ref":"#/definitions/n"}`), []byte(`{"$ref":"#"}`))
	f.Add([]byte(`{"enum":[1,"x",null],"minimum":1.5,"multipleOf":0.5}`), []byte(`{"enum":[1],"minimum":"x","multipleOf":0}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ca, errA := compat.Parse("a", a)
		cb, errB := compat.Parse("a", b)
		if errA != nil || errB != nil {
			return
		}
		_ = compat.Compare([]compat.Contract{ca}, []compat.Contract{cb})
		if r := compat.Compare([]compat.Contract{ca}, []compat.Contract{ca}); len(r.Findings) != 0 {
			t.Fatalf("identical documents differ: %+v", r.Findings)
		}
	})
}

// BenchmarkCompare compares the research example's contracts with an edited copy.
func BenchmarkCompare(b *testing.B) {
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		b.Fatal(err)
	}
	base, _ := compat.FromFleet(irtest.LoadSource(b, string(src)))
	head := make([]compat.Contract, len(base))
	for i, c := range base {
		var doc map[string]any
		raw, _ := json.Marshal(c.Schema)
		_ = json.Unmarshal(raw, &doc)
		dig := doc["properties"].(map[string]any)["detail"].(map[string]any)
		dig["additionalProperties"] = false
		head[i] = c
		head[i].Schema = doc
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := compat.Compare(base, head); len(r.Findings) == 0 {
			b.Fatal("no findings")
		}
	}
}
