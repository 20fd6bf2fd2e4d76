package compiler_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the examples (and delete stale files); read the diff before committing")

// kitchenSink has at least two of every collection a spec can hold; it is built into goldens
// and checked by the consumers like an example, but is not one.
const kitchenSink = "testdata/kitchen-sink/fleet.yaml"

// examples returns every spec built into testdata/golden: the examples and the kitchen sink.
func examples(t testing.TB) []string {
	paths, err := filepath.Glob("../examples/*/fleet.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	return append(paths, kitchenSink)
}

// build is what fleetc build writes for src: its files, or, for a spec with environments,
// each environment's under <env>/.
func build(t testing.TB, name string, src []byte) *artifact.Set {
	t.Helper()
	each := buildEach(t, name, src)
	if set, plain := each[""]; plain {
		return set
	}
	all, _ := artifact.NewSet()
	for env, set := range each {
		for _, f := range set.Files() {
			if err := all.Add(artifact.File{Path: env + "/" + f.Path, Bytes: f.Bytes}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return all
}

// buildEach builds every fleet src describes: {"": files} for a spec without environments,
// else one entry per environment.
func buildEach(t testing.TB, name string, src []byte) map[string]*artifact.Set {
	t.Helper()
	file, _ := spec.Load(name, src)
	envs := []string{""}
	if file != nil && len(file.Environments()) > 0 {
		envs = file.Environments()
	}
	out := map[string]*artifact.Set{}
	for _, env := range envs {
		res, err := compiler.Compile(compiler.Input{Name: name, Source: src, Env: env})
		if err != nil || res.Files == nil {
			t.Fatalf("%s %s does not build: %v\n%v", name, env, err, res.Diagnostics)
		}
		out[env] = res.Files
	}
	return out
}

func buildFile(t testing.TB, path string) *artifact.Set {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return build(t, path, src)
}

// TestGolden compares each example's full output with testdata/golden/<example>/, in both
// directions: a missing file and an extra file are both failures.
func TestGolden(t *testing.T) {
	for _, path := range examples(t) {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			got := buildFile(t, path)
			dir := filepath.Join("testdata", "golden", name)
			if *update {
				if err := artifact.WriteDir(dir, got); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := artifact.ReadDir(dir)
			if err != nil {
				t.Fatalf("%v (run go test ./compiler -update)", err)
			}
			for _, c := range artifact.Diff(want, got) {
				diff := ""
				if c.Kind == "changed" {
					wb, _ := want.Get(c.Path)
					gb, _ := got.Get(c.Path)
					diff = cmp.Diff(strings.Split(string(wb), "\n"), strings.Split(string(gb), "\n"))
				}
				t.Errorf("%s: %s (run go test ./compiler -update and review the diff)\n%s", c.Path, c.Kind, diff)
			}
		})
	}
}

// TestKindsOfArtifacts: every example yields the artifact kinds its spec calls for.
func TestKindsOfArtifacts(t *testing.T) {
	set := buildFile(t, "../examples/research-fleet/fleet.yaml")
	for _, prefix := range []string{"terraform/", "statemachines/conversation.asl.json", "k8s/researcher/", "k8s/coder/", "schemas/agent.step.requested.json", "runtime/researcher.json", "runtime/coder.json"} {
		found := false
		for _, p := range set.Paths() {
			if strings.HasPrefix(p, prefix) {
				found = true
			}
		}
		if !found {
			t.Errorf("no artifact under %s", prefix)
		}
	}
}

// TestDeterministic: repeated builds, and a build of the same spec with every map written in
// reverse order, give identical bytes. Go randomises map iteration, so an unsorted map in a
// backend differs between builds; with several builds per spec (and several classes with
// two or more of everything in the kitchen sink) such a leak cannot pass by luck.
func TestDeterministic(t *testing.T) {
	specs := map[string][]byte{"generated 40-class fleet": irtest.BigFleet(40)}
	for _, path := range examples(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		specs[path] = src
	}
	for name, src := range specs {
		if err := checkDeterministic(name, src, 4, false, func(src []byte) *artifact.Set { return build(t, name, src) }); err != nil {
			t.Error(err)
		}
	}
}

// checkDeterministic builds src n times and once with every YAML mapping reversed, and says
// where the outputs differ. build returns nil for a spec that does not build. Reversal can
// legitimately break a document (an alias moved before its anchor); with lenient set, a
// reversed document that does not build is not compared.
func checkDeterministic(name string, src []byte, n int, lenient bool, build func([]byte) *artifact.Set) error {
	first := build(src)
	if first == nil {
		return fmt.Errorf("%s does not build", name)
	}
	for i := 1; i < n; i++ {
		if d := artifact.Diff(first, build(src)); len(d) > 0 {
			return fmt.Errorf("%s: two builds differ: %v", name, d)
		}
	}
	reordered, err := reverseMaps(src)
	if err != nil {
		if lenient {
			return nil
		}
		return fmt.Errorf("%s: %v", name, err)
	}
	again := build(reordered)
	if again == nil {
		if lenient {
			return nil
		}
		return fmt.Errorf("%s: does not build with its maps reversed:\n%s", name, reordered)
	}
	if d := artifact.Diff(first, again); len(d) > 0 {
		return fmt.Errorf("%s: map order leaks into output: %v", name, d)
	}
	return nil
}

// reverseMaps re-emits a YAML document with the keys of every mapping reversed.
func reverseMaps(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			var pairs [][2]*yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				pairs = append(pairs, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
			}
			n.Content = n.Content[:0]
			for i := len(pairs) - 1; i >= 0; i-- {
				n.Content = append(n.Content, pairs[i][0], pairs[i][1])
			}
		}
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == "" {
			// An implicit null (`{ key }`, `key:`) is re-emitted in a flow mapping as '':
			// spell it out, so the reordered document means the same as the original.
			n.Value = "null"
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	return yaml.Marshal(&doc)
}

func BenchmarkValidateResearch(b *testing.B) {
	src, _ := os.ReadFile("../examples/research-fleet/fleet.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, fleet, ds := compiler.LoadBytes("fleet.yaml", src); fleet == nil || ds.HasErrors() {
			b.Fatal(ds)
		}
	}
}

func BenchmarkBuildResearch(b *testing.B) {
	src, _ := os.ReadFile("../examples/research-fleet/fleet.yaml")
	b.ReportAllocs()
	for b.Loop() {
		build(b, "fleet.yaml", src)
	}
}

func BenchmarkBuild1000Classes(b *testing.B) {
	src := irtest.BigFleet(1000)
	b.ReportAllocs()
	for b.Loop() {
		build(b, "big.yaml", src)
	}
}

func TestBigFleetBuilds(t *testing.T) {
	set := build(t, "big.yaml", irtest.BigFleet(50))
	if n := len(set.Paths()); n < 100 {
		t.Fatalf("50 classes gave only %d files", n)
	}
}

func BenchmarkValidate1000Classes(b *testing.B) {
	src := irtest.BigFleet(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, fleet, ds := compiler.LoadBytes("big.yaml", src); fleet == nil || ds.HasErrors() {
			b.Fatal(ds)
		}
	}
}
