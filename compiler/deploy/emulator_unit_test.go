package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The kumo-account gap's matcher, clause by clause: only a lifecycle precondition whose
// condition compares with a literal IAM ARN of another account matches; a postcondition, a
// precondition outside lifecycle, a condition that is not a comparison with a string literal,
// and an ARN that is not IAM's (or not an ARN) do not.
func TestPreconditionAccountIsNot(t *testing.T) {
	match := preconditionAccountIsNot(KumoAccount)
	pre := func(block, cond string) string {
		return "resource \"aws_iam_role\" \"r\" {\n  lifecycle {\n    " + block + " {\n      condition = " + cond + "\n      error_message = \"x\"\n    }\n  }\n}\n"
	}
	const other = `"arn:aws:iam::111122223333:role/keda"`
	for _, tc := range []struct {
		name, src string
		want      bool
	}{
		{"another account", pre("precondition", "data.x.arn == "+other), true},
		{"the shortest IAM ARN naming an account", pre("precondition", `data.x.arn == "arn:aws:iam::111122223333"`), true},
		{"kumo's account", pre("precondition", `data.x.arn == "arn:aws:iam::`+KumoAccount+`:role/keda"`), false},
		{"a postcondition", pre("postcondition", "data.x.arn == "+other), false},
		{"outside lifecycle", "resource \"aws_iam_role\" \"r\" {\n  other {\n    precondition {\n      condition = data.x.arn == " + other + "\n    }\n  }\n}\n", false},
		{"no condition", "resource \"aws_iam_role\" \"r\" {\n  lifecycle {\n    precondition {\n      error_message = " + other + "\n    }\n  }\n}\n", false},
		{"not a comparison", pre("precondition", other), false},
		{"compared with a number", pre("precondition", "data.x.n == 111122223333"), false},
		{"compared with null", pre("precondition", "data.x.arn == null"), false},
		{"compared with a reference", pre("precondition", "data.x.arn == var.arn"), false},
		{"not IAM", pre("precondition", `data.x.arn == "arn:aws:sts::111122223333:assumed-role/keda"`), false},
		{"not an ARN", pre("precondition", `data.x.arn == "urn:aws:iam::111122223333:role/keda"`), false},
		{"too short to name an account", pre("precondition", `data.x.arn == "arn:aws:iam:"`), false},
	} {
		f, ds := hclsyntax.ParseConfig([]byte(tc.src), "t.tf", hcl.InitialPos)
		if ds.HasErrors() {
			t.Fatalf("%s: %v", tc.name, ds)
		}
		body := f.Body.(*hclsyntax.Body).Blocks[0].Body
		if got := match(body); got != tc.want {
			t.Errorf("%s: match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// traversalAddr names the resource an expression starts with, and nothing for variables,
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
		e, ds := hclsyntax.ParseExpression([]byte(expr), "t.tf", hcl.InitialPos)
		if ds.HasErrors() {
			t.Fatalf("%s: %v", expr, ds)
		}
		vars := e.Variables()
		if len(vars) != 1 {
			t.Fatalf("%s: %d traversals", expr, len(vars))
		}
		if got := traversalAddr(vars[0]); got != want {
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

// templatePath reads only templatefile("${path.module}/../REL", {...}); any other definition,
// a variable or a literal path among them, is refused (the caller then names the gap), never
// a panic.
func TestTemplatePathShapes(t *testing.T) {
	for _, c := range []struct {
		def, want string
	}{
		{`templatefile("${path.module}/../statemachines/flow.asl.json", { q = "x" })`, "statemachines/flow.asl.json"},
		{`templatefile(var.definition, {})`, ""},
		{`templatefile("statemachines/flow.asl.json", {})`, ""},
		{`templatefile("${path.module}/statemachines/flow.asl.json", {})`, ""},
		{`file("${path.module}/../statemachines/flow.asl.json")`, ""},
		{`"{}"`, ""},
	} {
		src := "resource \"aws_sfn_state_machine\" \"flow\" {\n  definition = " + c.def + "\n}\n"
		f, ds := hclsyntax.ParseConfig([]byte(src), "main.tf", hcl.InitialPos)
		if ds.HasErrors() {
			t.Fatalf("%s: %s", c.def, ds.Error())
		}
		r := &block{file: "main.tf", typ: "aws_sfn_state_machine", name: "flow", body: f.Body.(*hclsyntax.Body).Blocks[0].Body, src: []byte(src)}
		path, _, ok := templatePath(r, "definition", "fleetc_emulator_flow.asl.json")
		if ok != (c.want != "") || path != c.want {
			t.Errorf("%s: path %q ok %v, want %q", c.def, path, ok, c.want)
		}
	}
}
