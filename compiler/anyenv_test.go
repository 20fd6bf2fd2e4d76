package compiler_test

import (
	"bytes"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/types"
)

// What fleetc types and fleetc schemas check print is the same in every environment of a
// spec (an environment cannot override an event or a class's output), which is why they
// need no --env: LoadContracts without one takes the first environment, and its contracts
// and types equal every other environment's, byte for byte.
func TestContractsEqualInEveryEnvironment(t *testing.T) {
	const path = "../examples/environments/fleet.yaml"
	envs := compiler.Environments(path)
	if len(envs) < 2 {
		t.Fatalf("the example declares %v", envs)
	}
	_, first, ds := compiler.LoadContracts(path, "")
	if first == nil || ds.HasErrors() {
		t.Fatalf("without --env: %v", ds)
	}
	want := contractsAndTypes(t, first)
	for _, env := range envs {
		_, f, ds := compiler.LoadEnv(path, env)
		if f == nil || ds.HasErrors() {
			t.Fatalf("%s: %v", env, ds)
		}
		if got := contractsAndTypes(t, f); !bytes.Equal(got, want) {
			t.Errorf("environment %s: contracts or types differ from the first environment's", env)
		}
	}
	if _, _, ds := compiler.LoadEnv(path, ""); !ds.HasErrors() {
		t.Error("a command that can differ per environment loads without --env")
	}
}

func contractsAndTypes(t *testing.T, f *ir.Fleet) []byte {
	t.Helper()
	var b bytes.Buffer
	cs, ds := compat.FromFleet(f)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	for _, c := range cs {
		b.WriteString(c.Name + "\n")
		b.Write(c.Content)
	}
	for _, lang := range types.Langs() {
		g, err := types.Generate(f, lang)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(g.Bytes)
	}
	return b.Bytes()
}
