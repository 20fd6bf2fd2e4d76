package compiler_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/fleetc/fleetc/compiler/keda"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/schemas/jobs"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

const llmAsyncTools = "testdata/llm-async-tools/fleet.yaml"

// TestLLMAsyncToolsOnEveryRuntime: an llm class naming async:<class> tools gets, on eks,
// lambda and agentcore alike, the tools config of exactly the classes it names (in the
// runtime config fleet-worker parses, which reaches it unchanged: the ConfigMap's
// config.json, the S3 object FLEET_CONFIG_S3 of the function or AgentCore runtime names), equal to those
// classes' entries of tools/tools.json; and its worker role may publish exactly those
// classes' request events, create and read job items, and list only its own jobs
// (class:<its class>), never move a job (the async worker's UpdateItem). A class without
// async tools gets neither.
func TestLLMAsyncToolsOnEveryRuntime(t *testing.T) {
	set := buildFile(t, llmAsyncTools)
	tf := parseTerraform(t, set)
	raw, ok := set.Get(rc.ToolsFile)
	if !ok {
		t.Fatalf("%s not generated", rc.ToolsFile)
	}
	all, err := rc.ParseTools(rc.ToolsFile, raw)
	if err != nil {
		t.Fatal(err)
	}
	entry := map[string]rc.ToolClass{}
	for _, c := range all.Classes {
		entry[c.Class] = c
	}
	for _, tc := range []struct {
		class, runtime string
		named          []string // in the fleet's class order (by name)
		types, sources []string // of their request events, sorted
	}{
		{"helper-eks", rc.RuntimeEKS, []string{"reindex"}, []string{"reindex.requested"}, []string{"jobsx.agents"}},
		{"helper-lambda", rc.RuntimeLambda, []string{"export", "reindex"}, []string{"export.requested", "reindex.requested"}, []string{"jobsx.agents", "jobsx.exports"}},
		{"helper-core", rc.RuntimeAgentCore, []string{"export"}, []string{"export.requested"}, []string{"jobsx.exports"}},
		{"plain-llm", rc.RuntimeLambda, nil, nil, nil},
		{"reindex", rc.RuntimeLambda, nil, nil, nil},
	} {
		t.Run(tc.class, func(t *testing.T) {
			path := "runtime/" + tc.class + ".json"
			b, ok := set.Get(path)
			if !ok {
				t.Fatalf("%s not generated", path)
			}
			cfg, err := rc.Parse(path, b) // what fleet-worker does at start
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Runtime != tc.runtime {
				t.Fatalf("runtime %s, want %s", cfg.Runtime, tc.runtime)
			}
			var got []string
			if cfg.AsyncTools != nil {
				for _, c := range cfg.AsyncTools.Classes {
					got = append(got, c.Class)
					if w, _ := json.Marshal(entry[c.Class]); string(w) != mustJSON(t, c) {
						t.Errorf("async_tools entry %s differs from tools.json's:\n%s\n%s", c.Class, mustJSON(t, c), w)
					}
				}
				if cfg.AsyncTools.Table != all.Table || cfg.AsyncTools.Bus != all.Bus || cfg.AsyncTools.ListTool != all.ListTool {
					t.Errorf("async_tools table/bus/list %s/%s/%s, tools.json %s/%s/%s", cfg.AsyncTools.Table, cfg.AsyncTools.Bus,
						cfg.AsyncTools.ListTool, all.Table, all.Bus, all.ListTool)
				}
			}
			if !slices.Equal(got, tc.named) {
				t.Errorf("async_tools classes %v, want %v", got, tc.named)
			}

			// The config reaches the runtime as rendered.
			n := strings.ReplaceAll(tc.class, "-", "_")
			fromFile := `file("${path.module}/../runtime/` + tc.class + `.json")`
			objectRef := config.EnvConfigS3 + ` = "s3://${aws_s3_object.` + n + `_config.bucket}/${aws_s3_object.` + n + `_config.key}?`
			switch tc.runtime {
			case rc.RuntimeEKS:
				cm := manifest(t, set, "k8s/"+tc.class+"/configmap.yaml")
				if dig(t, cm, "data", keda.ConfigKey) != string(b) {
					t.Errorf("ConfigMap %s is not %s", keda.ConfigKey, path)
				}
			case rc.RuntimeLambda, rc.RuntimeAgentCore:
				if got := tf.attr(t, tf.block(t, "resource", "aws_s3_object", n+"_config"), "content"); got != fromFile {
					t.Errorf("config object content = %s, want %s", got, fromFile)
				}
				env := ""
				if tc.runtime == rc.RuntimeLambda {
					env = tf.text(t, tf.block(t, "resource", "aws_lambda_function", n))
				} else {
					env = tf.attr(t, tf.block(t, "resource", "aws_bedrockagentcore_agent_runtime", n), "environment_variables")
				}
				if !strings.Contains(spaceRun.ReplaceAllString(env, " "), objectRef) {
					t.Errorf("%s environment lacks %s... naming the object of %s:\n%s", tc.runtime, objectRef, path, env)
				}
			}

			// The worker role: the agent side of the named classes, as class:<class>.
			st := policyStatements(t, tf, n+"_worker")
			if tc.named == nil {
				for _, sid := range []string{"CreateAndReadJobs", "ListOwnersJobs", "RequestJobs"} {
					if _, ok := st[sid]; ok {
						t.Errorf("%s names no async tool but has %s", tc.class, sid)
					}
				}
				return
			}
			quoted := func(vs []string) string { return `["` + strings.Join(vs, `", "`) + `"]` }
			for sid, want := range map[string]string{
				"RequestJobs": `["events:PutEvents"] [aws_cloudwatch_event_bus.fleet.arn] StringEquals events:detail-type ` + quoted(tc.types) +
					`; StringEquals events:source ` + quoted(tc.sources),
				"CreateAndReadJobs": `["dynamodb:GetItem", "dynamodb:PutItem"] [aws_dynamodb_table.jobs.arn] ForAllValues:StringLike dynamodb:LeadingKeys ["` +
					jobs.JobKeyPrefix(jobs.ClassPrincipal(tc.class)) + `*"]`,
				"ListOwnersJobs": `["dynamodb:Query"] ["${aws_dynamodb_table.jobs.arn}/index/by_owner"] ForAllValues:StringLike dynamodb:LeadingKeys ["` +
					jobs.OwnerKeyPrefix(jobs.ClassPrincipal(tc.class)) + `*"]`,
			} {
				if st[sid] != want {
					t.Errorf("%s:\n got  %s\n want %s", sid, st[sid], want)
				}
			}
			for sid, s := range st {
				if strings.Contains(s, "dynamodb:UpdateItem") && strings.Contains(s, "aws_dynamodb_table.jobs") {
					t.Errorf("%s may move jobs (%s): the async worker's permission", tc.class, sid)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// policyStatements are a policy document's statements by sid, each as
// "actions resources test variable values[; ...]" from the Terraform source.
func policyStatements(t *testing.T, tf *tfModule, name string) map[string]string {
	t.Helper()
	d := tf.block(t, "data", "aws_iam_policy_document", name)
	out := map[string]string{}
	file := tf.src[tf.file[d]] // nested blocks are sliced from their document's file
	src := func(b *hclsyntax.Block, n string) string {
		a, ok := b.Body.Attributes[n]
		if !ok {
			return ""
		}
		return spaceRun.ReplaceAllString(string(a.Expr.Range().SliceBytes(file)), " ")
	}
	for _, sb := range d.Body.Blocks {
		if sb.Type != "statement" {
			continue
		}
		s := src(sb, "actions") + " " + src(sb, "resources")
		var conds []string
		for _, cb := range sb.Body.Blocks {
			if cb.Type == "condition" {
				conds = append(conds, strings.Trim(src(cb, "test"), `"`)+" "+strings.Trim(src(cb, "variable"), `"`)+" "+src(cb, "values"))
			}
		}
		if len(conds) > 0 {
			s += " " + strings.Join(conds, "; ")
		}
		out[strings.Trim(src(sb, "sid"), `"`)] = s
	}
	return out
}
