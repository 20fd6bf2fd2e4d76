// Command startphases times, in one fresh process, the cold phases of `fleetc build` for a
// spec: compiling the embedded fleet JSON Schema, loading (parse, validate, lower, check) and
// generating every file. tools/bench-startup.sh runs it N times and keeps each phase's least
// time; a warm benchmark (compiler's BenchmarkBuildResearch) hides what a first run pays.
//
//	go run ./tools/startphases examples/research-fleet/fleet.yaml
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/spec"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: startphases fleet.yaml")
		os.Exit(2)
	}
	t0 := time.Now()
	if _, _, err := spec.Schema(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t1 := time.Now()
	_, f, ds := compiler.Load(os.Args[1])
	if f == nil || ds.HasErrors() {
		fmt.Fprintln(os.Stderr, ds)
		os.Exit(1)
	}
	t2 := time.Now()
	if _, ds := compiler.Generate(f); ds.HasErrors() {
		fmt.Fprintln(os.Stderr, ds)
		os.Exit(1)
	}
	t3 := time.Now()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("schema %.2f load %.2f generate %.2f\n", ms(t1.Sub(t0)), ms(t2.Sub(t1)), ms(t3.Sub(t2)))
}
