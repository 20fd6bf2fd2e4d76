package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/artifact"
)

// The kumo-account gap's matcher, clause by clause: only a lifecycle precondition whose
// condition compares with a literal IAM ARN of another account matches; a postcondition, a
// precondition outside lifecycle, a condition that is not a comparison with a string literal,
// and an ARN that is not IAM's (or not an ARN) do not.
func TestPreconditionAccountIsNot(t *testing.T) {
	match := preconditionAccountIsNot(KumoAccount)
	role := func(path, src string) *artifact.Block {
		return &artifact.Block{Kind: artifact.KindResource, Type: "aws_iam_role", Name: "r",
			Attrs: []artifact.Attr{{Path: "name", Src: `"r"`}, {Path: path, Src: src}}}
	}
	pre := func(cond string) *artifact.Block { return role("lifecycle.0.precondition.0.condition", cond) }
	const other = `"arn:aws:iam::111122223333:role/keda"`
	for _, tc := range []struct {
		name string
		b    *artifact.Block
		want bool
	}{
		{"another account", pre("data.x.arn == " + other), true},
		{"the second precondition", role("lifecycle.0.precondition.1.condition", "data.x.arn == "+other), true},
		{"the shortest IAM ARN naming an account", pre(`data.x.arn == "arn:aws:iam::111122223333"`), true},
		{"an escaped literal", pre(`data.x.arn == "arn:aws:iam::111122223333:role/\u006beda"`), true},
		{"kumo's account", pre(`data.x.arn == "arn:aws:iam::` + KumoAccount + `:role/keda"`), false},
		{"a postcondition", role("lifecycle.0.postcondition.0.condition", "data.x.arn == "+other), false},
		{"outside lifecycle", role("other.0.precondition.0.condition", "data.x.arn == "+other), false},
		{"no condition", role("lifecycle.0.precondition.0.error_message", other), false},
		{"not a comparison", pre(other), false},
		{"compared with a number", pre("data.x.n == 111122223333"), false},
		{"compared with null", pre("data.x.arn == null"), false},
		{"compared with a reference", pre("data.x.arn == var.arn"), false},
		{"compared with a template", pre(`data.x.arn == "arn:aws:iam::${var.account}:role/keda"`), false},
		{"not IAM", pre(`data.x.arn == "arn:aws:sts::111122223333:assumed-role/keda"`), false},
		{"not an ARN", pre(`data.x.arn == "urn:aws:iam::111122223333:role/keda"`), false},
		{"too short to name an account", pre(`data.x.arn == "arn:aws:iam:"`), false},
	} {
		if got := match(tc.b); got != tc.want {
			t.Errorf("%s: match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// traversalAddr names the resource a traversal starts with, and nothing for variables,
// locals, path.module or a traversal too short to name a resource (never an index panic).
func TestTraversalAddr(t *testing.T) {
	for expr, want := range map[string]string{
		"aws_sqs_queue.a.url":                 "aws_sqs_queue.a",
		"aws_sqs_queue.a[0].arn":              "aws_sqs_queue.a",
		"aws_s3_bucket.path.arn":              "aws_s3_bucket.path",
		"aws_sqs_queue.a":                     "aws_sqs_queue.a",
		"aws_sqs_queue":                       "",
		"data.aws_iam_policy_document.x.json": "data.aws_iam_policy_document.x",
		"data.aws_region.current":             "data.aws_region.current",
		"data.aws_region":                     "",
		"var.queue_name":                      "",
		"local.queue_arn":                     "",
		"path.module":                         "",
		"each.value":                          "",
		"module.network.vpc_id":               "",
	} {
		if got := traversalAddr(expr); got != want {
			t.Errorf("traversalAddr(%s) = %q, want %q", expr, got, want)
		}
	}
}

// RemoveEmulatorFiles removes the override and the files beside it, nothing else, and says
// when one cannot be removed (a later plain terraform apply would still target the emulator).
func TestRemoveEmulatorFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{OverrideFile, EmulatorFilePrefix + "flow.asl.json", "main.tf"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveEmulatorFiles(dir); err != nil {
		t.Fatal(err)
	}
	if left := EmulatorFiles(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "main.tf")); err != nil {
		t.Errorf("main.tf: %v", err)
	}
	stuck := filepath.Join(dir, EmulatorFilePrefix+"stuck")
	if err := os.MkdirAll(filepath.Join(stuck, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RemoveEmulatorFiles(dir); err == nil || !strings.Contains(err.Error(), stuck) {
		t.Errorf("err = %v, want one naming %s", err, stuck)
	}
}

// templatePath reads only a definition that is templatefile("${path.module}/../REL", {...})
// as the backend records it (one templatefile input); a definition reading nothing, one read
// through file(), or a call wrapped in another is refused (the caller then names the gap),
// never a panic. The path literal is what the copy's name replaces.
func TestTemplatePathShapes(t *testing.T) {
	const src = `templatefile("${path.module}/../statemachines/flow.asl.json", { q = "x" })`
	lit := artifact.Span{Text: "/../statemachines/flow.asl.json", Start: strings.Index(src, "/../"), End: strings.Index(src, `", {`)}
	read := []artifact.Input{{Func: "templatefile", File: "statemachines/flow.asl.json", Span: lit}}
	for _, c := range []struct {
		name, src string
		inputs    []artifact.Input
		want      string
	}{
		{"templatefile of a generated file", src, read, "statemachines/flow.asl.json"},
		{"reads nothing", `templatefile(var.definition, {})`, nil, ""},
		{"read through file()", `file("${path.module}/../statemachines/flow.asl.json")`, []artifact.Input{{Func: "file", File: "statemachines/flow.asl.json", Span: lit}}, ""},
		{"wrapped", "jsonencode(" + src + ")", read, ""},
		{"a file() in its variables", `templatefile(var.definition, { x = file("${path.module}/../statemachines/flow.asl.json") })`,
			[]artifact.Input{{Func: "file", File: "statemachines/flow.asl.json", Span: lit}}, ""},
		{"a literal", `"{}"`, nil, ""},
	} {
		r := &block{&artifact.Block{Kind: artifact.KindResource, Type: "aws_sfn_state_machine", Name: "flow",
			Attrs: []artifact.Attr{{Path: "definition", Src: c.src, Inputs: c.inputs}}}}
		path, expr, ok := templatePath(r, "definition", "fleetc_emulator_flow.asl.json")
		if ok != (c.want != "") || path != c.want {
			t.Errorf("%s: path %q ok %v, want %q", c.name, path, ok, c.want)
		}
		if want := `templatefile("${path.module}/fleetc_emulator_flow.asl.json", { q = "x" })`; ok && expr != want {
			t.Errorf("%s: expression %s, want %s", c.name, expr, want)
		}
	}
}
