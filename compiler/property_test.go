package compiler_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/spec/diag"
)

// TestGeneratedFleetsDeterministic is the whole-pipeline determinism property over fleets a
// seeded generator writes: every combination of runtime, ordering, model chain, emitted
// events, side effects and workflow shape it draws must validate, build, and give the same
// bytes twice and with every map reversed. FuzzCompile mutates bytes, which rarely yields a
// new valid fleet; this reaches combinations no example has, in every go test.
func TestGeneratedFleetsDeterministic(t *testing.T) {
	const fleets = 24
	drawn := map[string]int{}
	defer func() { // a generator that stops drawing a feature would test less, silently
		for _, feature := range generatedFeatures {
			if drawn[feature] == 0 {
				t.Errorf("no generated fleet has %q", feature)
			}
		}
	}()
	for seed := range uint64(fleets) {
		src := generatedFleet(rand.New(rand.NewPCG(seed, 11)))
		for _, line := range strings.Split(string(src), "\n") {
			for _, feature := range generatedFeatures {
				if strings.Contains(line, feature) {
					drawn[feature]++
				}
			}
		}
		name := fmt.Sprintf("generated fleet %d", seed)
		_, fleet, ds := compiler.LoadBytes(name, src)
		if fleet == nil || ds.HasErrors() {
			var errs diag.Diagnostics
			for _, d := range ds {
				if d.Severity == diag.Error {
					errs = append(errs, d)
				}
			}
			t.Errorf("%s does not validate:\n%s\n%s", name, errs, src)
			continue
		}
		err := checkDeterministic(name, src, 2, false, func(src []byte) *artifact.Set {
			_, fleet, ds := compiler.LoadBytes(name, src)
			if fleet == nil || ds.HasErrors() {
				return nil
			}
			set, gds := compiler.Generate(fleet)
			if gds.HasErrors() {
				t.Errorf("%s: %s", name, gds)
				return nil
			}
			return set
		})
		if err != nil {
			t.Errorf("%v\n%s", err, src)
		}
	}
}

// generatedFeatures are the spec lines the generated fleets must, between them, contain.
var generatedFeatures = []string{"runtime: eks", "runtime: lambda", "fifo: true", "fallbacks:", "non_idempotent", "fan_out:", "heartbeat:", "emits:", "workflows:"}

var modelTargets = []string{
	"bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0",
	"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
	"bedrock/global.anthropic.claude-haiku-4-5-20251001-v1:0",
}

// generatedFleet draws a valid fleet: events with a trace and a conversation id, model
// policies chained by fallbacks, classes on EKS or Lambda that consume one event and emit
// some, standard or FIFO, idempotent or keyed, and workflows of task and fan-out steps.
func generatedFleet(rng *rand.Rand) []byte {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	nEvents, nModels, nClasses := 1+rng.IntN(4), 1+rng.IntN(len(modelTargets)), 1+rng.IntN(6)

	events := map[string]any{}
	for e := range nEvents {
		props := map[string]any{
			"trace_id":        map[string]any{"type": "string"},
			"conversation_id": map[string]any{"type": "string", "maxLength": 100},
			"agent_class":     map[string]any{"type": "string"},
			"result":          map[string]any{"type": "object"},
			"result_ref":      map[string]any{"type": "object"},
		}
		for p := range rng.IntN(4) {
			props[fmt.Sprintf("field%d", p)] = map[string]any{"type": pick("string", "integer", "boolean")}
		}
		events[fmt.Sprintf("work.e%d", e)] = map[string]any{
			"version": 1 + rng.IntN(3), "source": pick("gen.app", "gen.workers"),
			"detail": map[string]any{"type": "object", "required": []string{"trace_id", "conversation_id"}, "properties": props},
		}
	}

	models := map[string]any{}
	for m := range nModels {
		p := map[string]any{ // one target each: a fallback never shares its policy's (M001)
			"targets":       []string{modelTargets[m]},
			"retries":       rng.IntN(3),
			"timeout":       pick("30s", "60s"),
			"max_in_flight": 1000 * (1 + rng.IntN(5)), // above any scaling drawn below (W005)
		}
		if m+1 < nModels && rng.IntN(2) == 0 { // fallbacks point forward only: no cycles
			p["fallbacks"] = []string{fmt.Sprintf("m%d", m+1+rng.IntN(nModels-m-1))}
		}
		models[fmt.Sprintf("m%d", m)] = p
	}

	agents := map[string]any{}
	runtimes, emits := make([]string, nClasses), make([]bool, nClasses)
	for c := range nClasses {
		runtimes[c] = pick("eks", "lambda")
		consumed := rng.IntN(nEvents)
		a := map[string]any{
			"description": fmt.Sprintf("generated class %d", c),
			"runtime":     runtimes[c],
			"consumes": map[string]any{"event": fmt.Sprintf("work.e%d", consumed),
				"match": map[string]any{"agent_class": []string{fmt.Sprintf("c%d", c)}}},
			"step":    map[string]any{"p95": pick("10s", "30s"), "max": pick("2m", "5m")},
			"handler": map[string]any{"exec": []string{"/app/run"}},
		}
		var emitted []string // up to two events, never the consumed one (a loop)
		for _, e := range rng.Perm(nEvents)[:rng.IntN(nEvents+1)] {
			if e != consumed && len(emitted) < 2 {
				emitted = append(emitted, fmt.Sprintf("work.e%d", e))
			}
		}
		if len(emitted) > 0 {
			a["emits"] = emitted
			emits[c] = true
		}
		if rng.IntN(2) == 0 {
			a["model"] = fmt.Sprintf("m%d", rng.IntN(nModels))
		}
		if rng.IntN(3) == 0 {
			a["ordering"] = map[string]any{"fifo": true, "group_by": "conversation_id"}
		}
		if rng.IntN(2) == 0 {
			a["side_effects"] = "non_idempotent"
			a["idempotency"] = map[string]any{"key": []string{"trace_id"}}
		} else {
			a["side_effects"] = "idempotent"
		}
		if runtimes[c] == "eks" {
			a["scaling"] = map[string]any{"min": rng.IntN(2), "max": 2 + rng.IntN(20), "per_replica": 1 + rng.IntN(8)}
		}
		agents[fmt.Sprintf("c%d", c)] = a
	}

	workflows := map[string]any{}
	for w := range rng.IntN(3) {
		var steps []any
		for s := range 1 + rng.IntN(3) {
			c := rng.IntN(nClasses)
			task := map[string]any{"agent": fmt.Sprintf("c%d", c), "timeout": "20m"}
			if runtimes[c] == "eks" { // only eks workers heartbeat a task token (S003)
				task["heartbeat"] = "10m"
			}
			// A fan-out item carries no conversation_id, which every emitted event requires
			// (E020): only classes that emit nothing fan out.
			if !emits[c] && rng.IntN(2) == 0 {
				task["items"] = "$.items"
				task["max_concurrency"] = 1 + rng.IntN(50)
				steps = append(steps, map[string]any{"name": fmt.Sprintf("Fan%d", s), "fan_out": task})
				continue
			}
			task["name"] = fmt.Sprintf("Step%d", s)
			steps = append(steps, task)
		}
		workflows[fmt.Sprintf("w%d", w)] = map[string]any{"type": "standard", "steps": steps}
	}

	doc := map[string]any{
		"version": 1, "fleet": "gen" + strings.Repeat("x", rng.IntN(3)), "region": pick("us-east-1", "eu-west-1"),
		"bus": map[string]any{"name": "gen-bus"},
		"worker": map[string]any{
			"image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/fleet-worker:0.1.0",
			"eks":   map[string]any{"cluster": "gen", "keda_operator_role": "arn:aws:iam::111122223333:role/keda-operator"},
		},
		"events": events, "models": models, "agents": agents,
	}
	if len(workflows) > 0 {
		doc["workflows"] = workflows
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}
