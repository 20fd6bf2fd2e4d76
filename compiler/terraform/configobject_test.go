package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/config"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// fiveAsyncTools is a realistic fleet whose tools definitions and llm config are each past
// Lambda's 4 KB environment.
const fiveAsyncTools = "testdata/five-async-tools/fleet.yaml"

// envBudget is what a generated Lambda environment may take at most: a quarter of Lambda's
// 4 KB, so names, not configs, are all it carries.
const envBudget = 1024

// The fleet of issue 34 (five async tools with documented request schemas, an llm class
// offering all five) builds without TF008 and passes terraform validate: its configs reach
// the functions as S3 objects, each function naming its object and hash.
func TestFiveAsyncToolsFleet(t *testing.T) {
	f := lower(t, fiveAsyncTools)
	cfgs := configs(t, f)
	for _, name := range []string{rc.ToolsFile, "platform-assistant"} {
		if len(cfgs[name]) <= lambdaEnvLimit {
			t.Fatalf("%s config is %d bytes: the fleet no longer exercises configs past Lambda's %d", name, len(cfgs[name]), lambdaEnvLimit)
		}
	}
	files, ds := Generate(f, cfgs)
	if ds.HasErrors() {
		t.Fatalf("Generate: %v", ds)
	}
	h := allFiles(t, files)
	o := h.block(t, "resource", "aws_s3_object", "async_tools_config")
	if got := h.src(o.Body.Attributes["content"].Expr); got != `file("${path.module}/../tools/tools.json")` {
		t.Errorf("tools config object content = %s", got)
	}
	if got := h.src(o.Body.Attributes["key"].Expr); got != `"config/tools/tools/${filesha256("${path.module}/../tools/tools.json")}.json"` {
		t.Errorf("tools config object key = %s", got)
	}
	root := writeOut(t, f)
	checkFmtAndSchema(t, filepath.Join(root, Dir))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := verifytest.TerraformValidateOut(ctx, root, Dir); err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("terraform validate: %v", err)
	}
}

// No generated Lambda function (class, dispatcher, async tools) or AgentCore runtime of any
// example, nor of the five-async-tools fleet, has an environment over 1 KB. The environments
// are evaluated from the generated HCL as Terraform would: file() reads the generated
// configs, sha256/jsonencode/jsondecode are computed, and the values only AWS knows take
// their real lengths (12-digit account, SQS URLs, the runtime ARN's 10-character suffix).
func TestLambdaEnvironmentsUnderOneKB(t *testing.T) {
	specs := append(irtest.Examples(t), fiveAsyncTools)
	measured, largest := 0, 0
	for _, p := range specs {
		f := lower(t, p)
		for addr, size := range renderedEnvs(t, f) {
			measured, largest = measured+1, max(largest, size)
			if size > envBudget {
				t.Errorf("%s: %s environment is %d bytes, over %d", p, addr, size, envBudget)
			}
		}
	}
	t.Logf("%d environments, the largest %d bytes", measured, largest)
	if measured < 10 {
		t.Errorf("measured %d environments over %d specs: the generated functions were not found", measured, len(specs))
	}
}

// renderedEnvs evaluates the environment of every Lambda function and AgentCore runtime f
// generates and returns each one's size as Lambda measures it (the JSON object of names and
// values), by resource address.
func renderedEnvs(t *testing.T, f *ir.Fleet) map[string]int {
	t.Helper()
	files := generate(t, f)
	rendered, ds := runtimeconfig.Generate(f)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	byPath := map[string][]byte{}
	for _, fl := range append(append([]artifact.File{}, files...), rendered...) {
		byPath[fl.Path] = fl.Bytes
	}
	h := allFiles(t, files)
	const account = "123456789012"
	fns := map[string]function.Function{
		"file": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}}, Type: function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				b, ok := byPath[path.Clean(args[0].AsString())]
				if !ok {
					return cty.NilVal, function.NewArgErrorf(0, "no generated file %s", args[0].AsString())
				}
				return cty.StringVal(string(b)), nil
			}}),
		"sha256": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "s", Type: cty.String}}, Type: function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				s := sha256.Sum256([]byte(args[0].AsString()))
				return cty.StringVal(hex.EncodeToString(s[:])), nil
			}}),
		"filesha256": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}}, Type: function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				b, ok := byPath[path.Clean(args[0].AsString())]
				if !ok {
					return cty.NilVal, function.NewArgErrorf(0, "no generated file %s", args[0].AsString())
				}
				s := sha256.Sum256(b)
				return cty.StringVal(hex.EncodeToString(s[:])), nil
			}}),
		"jsonencode": stdlib.JSONEncodeFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
	}
	// What AWS assigns, at its real length.
	computed := func(typ string, attrs map[string]cty.Value) {
		name := func(k string) string {
			if v, ok := attrs[k]; ok && v.Type() == cty.String && v.IsKnown() {
				return v.AsString()
			}
			return ""
		}
		switch typ {
		case "aws_sqs_queue":
			if n := name("name"); n != "" {
				attrs["url"] = cty.StringVal("https://sqs." + f.Region + ".amazonaws.com/" + account + "/" + n)
			}
		case "aws_s3_bucket":
			if n := name("bucket"); n != "" {
				attrs["id"] = cty.StringVal(n)
			}
		case "aws_bedrockagentcore_agent_runtime":
			if n := name("agent_runtime_name"); n != "" {
				attrs["agent_runtime_arn"] = cty.StringVal("arn:aws:bedrock-agentcore:" + f.Region + ":" + account + ":runtime/" + n + "-a1b2c3d4e5")
			}
		}
	}
	resources := map[string]map[string]map[string]cty.Value{}
	ctx := &hcl.EvalContext{Functions: fns}
	setVars := func() {
		vars := map[string]cty.Value{
			"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(Dir)}),
			"data": cty.ObjectVal(map[string]cty.Value{
				"aws_caller_identity": cty.ObjectVal(map[string]cty.Value{"current": cty.ObjectVal(map[string]cty.Value{"account_id": cty.StringVal(account)})}),
				"aws_partition":       cty.ObjectVal(map[string]cty.Value{"current": cty.ObjectVal(map[string]cty.Value{"partition": cty.StringVal("aws")})}),
			}),
		}
		for typ, byName := range resources {
			objs := map[string]cty.Value{}
			for n, attrs := range byName {
				objs[n] = cty.ObjectVal(attrs)
			}
			vars[typ] = cty.ObjectVal(objs)
		}
		ctx.Variables = vars
	}
	// Literal attributes first, then what references them (an object's bucket, a variable).
	for pass := 0; pass < 3; pass++ {
		setVars()
		for _, b := range h.body {
			if b.Type != "resource" || len(b.Labels) != 2 {
				continue
			}
			typ, n := b.Labels[0], b.Labels[1]
			if resources[typ] == nil {
				resources[typ] = map[string]map[string]cty.Value{}
			}
			attrs := map[string]cty.Value{}
			for k, a := range b.Body.Attributes {
				if v, diags := a.Expr.Value(ctx); !diags.HasErrors() && v.IsWhollyKnown() {
					attrs[k] = v
				}
			}
			computed(typ, attrs)
			resources[typ][n] = attrs
		}
	}
	setVars()
	sizes := map[string]int{}
	measure := func(addr string, e hclsyntax.Expression) {
		v, diags := e.Value(ctx)
		if diags.HasErrors() {
			t.Errorf("%s: environment does not evaluate: %v", addr, diags)
			return
		}
		env := map[string]string{}
		for k, val := range v.AsValueMap() {
			if val.Type() != cty.String {
				t.Errorf("%s: %s is %s, not a string", addr, k, val.Type().FriendlyName())
				continue
			}
			env[k] = val.AsString()
		}
		b, _ := json.Marshal(env)
		sizes[addr] = len(b)
	}
	for _, b := range h.body {
		if b.Type != "resource" || len(b.Labels) != 2 {
			continue
		}
		addr := strings.Join(b.Labels, ".")
		switch b.Labels[0] {
		case "aws_lambda_function":
			for _, e := range b.Body.Blocks {
				if e.Type == "environment" {
					measure(addr, e.Body.Attributes["variables"].Expr)
				}
			}
		case "aws_bedrockagentcore_agent_runtime":
			measure(addr, b.Body.Attributes["environment_variables"].Expr)
		}
	}
	return sizes
}

// Every function that runs from a config object may read exactly its own config's objects,
// every reference a function carries names the object Terraform writes from its own config,
// and that object's key is its content's SHA-256 under the config's own prefix, replaced new
// before old (create_before_destroy): a function version running or cold-starting during an
// apply still finds the object its hash names.
func TestConfigObjectsExact(t *testing.T) {
	f := lower(t, fiveAsyncTools)
	h := allFiles(t, generate(t, f))
	for _, a := range f.Agents {
		n := local(a.Name)
		o := h.block(t, "resource", "aws_s3_object", n+"_config")
		if got := h.src(o.Body.Attributes["content"].Expr); got != `file("${path.module}/../`+a.ConfigPath+`")` {
			t.Errorf("%s: object content = %s", a.Name, got)
		}
		if got := h.src(o.Body.Attributes["key"].Expr); got != `"`+configDir(a.ConfigPath)+`${filesha256("${path.module}/../`+a.ConfigPath+`")}.json"` {
			t.Errorf("%s: object key = %s, want its content's hash under %s", a.Name, got, configDir(a.ConfigPath))
		}
		if got := h.src(h.blockIn(t, o, "lifecycle").Body.Attributes["create_before_destroy"].Expr); got != "true" {
			t.Errorf("%s: object lifecycle create_before_destroy = %s, want true (the old object outlives the switch)", a.Name, got)
		}
		if got := h.statements(t, n+"_worker")["ReadOwnConfig"]; got.actions != `["s3:GetObject"]` ||
			got.resources != `["${aws_s3_bucket.claimcheck.arn}/`+configDir(a.ConfigPath)+`*"]` {
			t.Errorf("%s: ReadOwnConfig = %+v", a.Name, got)
		}
		fn := h.block(t, "resource", "aws_lambda_function", n)
		env := h.src(h.blockIn(t, fn, "environment").Body.Attributes["variables"].Expr)
		want := `"s3://${aws_s3_object.` + n + `_config.bucket}/${aws_s3_object.` + n + `_config.key}?` + config.ObjectOwnerParam +
			`=${data.aws_caller_identity.current.account_id}&` + config.ObjectSHA256Param + `=${sha256(aws_s3_object.` + n + `_config.content)}"`
		if !strings.Contains(env, config.EnvConfigS3) || !strings.Contains(env, want) {
			t.Errorf("%s: environment lacks %s = %s:\n%s", a.Name, config.EnvConfigS3, want, env)
		}
	}
	// The bucket's lifecycle expires the payload prefixes only, never the config objects.
	lc := h.block(t, "resource", "aws_s3_bucket_lifecycle_configuration", "claimcheck")
	var prefixes []string
	for _, r := range lc.Body.Blocks {
		if r.Type != "rule" {
			continue
		}
		filter := h.blockIn(t, r, "filter")
		p := ""
		if a, ok := filter.Body.Attributes["prefix"]; ok {
			p = h.src(a.Expr)
		}
		if p == "" || strings.HasPrefix(configPrefix, strings.Trim(p, `"`)) {
			t.Errorf("lifecycle rule with filter prefix %q expires the config objects under %s", p, configPrefix)
		}
		prefixes = append(prefixes, strings.Trim(p, `"`))
	}
	if strings.Join(prefixes, ",") != strings.Join(ir.ClaimCheckRoots(), ",") {
		t.Errorf("lifecycle expires %v, want the claim-check roots %v", prefixes, ir.ClaimCheckRoots())
	}
}
