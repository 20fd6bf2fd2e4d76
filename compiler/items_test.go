package compiler_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/spec/diag"
)

// A fan-out's items is a Step Functions reference path. What CreateStateMachine would refuse
// (wildcards, deep scan, filters, slices, functions, $ alone) is an S010 error at validate
// time, positioned on the value in fleet.yaml. Before, anything starting with $ passed.
func TestFanOutItemsMustBeAReferencePath(t *testing.T) {
	src, err := os.ReadFile("../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const good = "items: $.subqueries"
	at := bytes.Index(src, []byte(good))
	if at < 0 {
		t.Fatalf("the example has no %q", good)
	}
	line := bytes.Count(src[:at], []byte("\n")) + 1
	col := at - bytes.LastIndexByte(src[:at], '\n') + len("items: ")

	for _, items := range []string{"$.subqueries", "$['subqueries']", "$.steps.Plan.subqueries[0]"} {
		_, _, ds := compiler.LoadBytes("fleet.yaml", bytes.Replace(src, []byte(good), []byte("items: "+items), 1))
		for _, d := range ds {
			if d.Code == "S010" {
				t.Errorf("items: %s: %v", items, d)
			}
		}
	}
	for _, items := range []string{"$.subqueries[*]", "$..subqueries", "$.subqueries[?(@.x)]", "$.subqueries[0:2]", "$.subqueries.length()", "$", "$$.Execution.Input.x", "'$.a b'"} {
		_, _, ds := compiler.LoadBytes("fleet.yaml", bytes.Replace(src, []byte(good), []byte("items: "+items), 1))
		n := 0
		for _, d := range ds {
			if d.Code != "S010" {
				continue
			}
			n++
			if d.Severity != diag.Error {
				t.Errorf("items: %s: %v is a %s, want an error", items, d, d.Severity)
			}
			if !strings.HasSuffix(d.Path, "/fan_out/items") || d.Subject == nil || d.Subject.Start.Line != line || d.Subject.Start.Column != col {
				t.Errorf("items: %s: S010 at %v (path %s), want fleet.yaml:%d:%d", items, d.Subject, d.Path, line, col)
			}
		}
		if n != 1 {
			t.Errorf("items: %s: %d S010 diagnostics, want 1\n%v", items, n, ds)
		}
	}
}
