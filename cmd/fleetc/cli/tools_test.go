package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

const asyncTools = "../../../examples/async-tools/fleet.yaml"

// TestToolsFormats: every format names the three tools, with the start tool's arguments
// derived from CdkSynthRequested (the tool-written jobId and trace_id left out,
// idempotencyKey required because the class's key is only the job id).
func TestToolsFormats(t *testing.T) {
	want := "start_cdk_synth,get_cdk_synth_status,list_my_jobs"
	for _, tc := range []struct {
		format string
		names  func(out []byte) (names []string, startParams map[string]any, required []any)
	}{
		{"json", func(out []byte) ([]string, map[string]any, []any) {
			var v struct {
				Tools []struct {
					Name        string
					InputSchema map[string]any `json:"inputSchema"`
				}
			}
			_ = json.Unmarshal(out, &v)
			var n []string
			for _, t := range v.Tools {
				n = append(n, t.Name)
			}
			p, _ := v.Tools[0].InputSchema["properties"].(map[string]any)
			r, _ := v.Tools[0].InputSchema["required"].([]any)
			return n, p, r
		}},
		{"openai", func(out []byte) ([]string, map[string]any, []any) {
			var v []struct {
				Type     string
				Function struct {
					Name       string
					Parameters map[string]any
				}
			}
			_ = json.Unmarshal(out, &v)
			var n []string
			for _, t := range v {
				if t.Type == "function" {
					n = append(n, t.Function.Name)
				}
			}
			p, _ := v[0].Function.Parameters["properties"].(map[string]any)
			r, _ := v[0].Function.Parameters["required"].([]any)
			return n, p, r
		}},
		{"mcp", func(out []byte) ([]string, map[string]any, []any) {
			var v struct {
				Tools []struct {
					Name        string
					InputSchema map[string]any `json:"inputSchema"`
				}
			}
			_ = json.Unmarshal(out, &v)
			var n []string
			for _, t := range v.Tools {
				n = append(n, t.Name)
			}
			p, _ := v.Tools[0].InputSchema["properties"].(map[string]any)
			r, _ := v.Tools[0].InputSchema["required"].([]any)
			return n, p, r
		}},
		{"bedrock", func(out []byte) ([]string, map[string]any, []any) {
			var v struct {
				Functions []struct {
					Name       string
					Parameters map[string]map[string]any
				}
			}
			_ = json.Unmarshal(out, &v)
			var n []string
			for _, f := range v.Functions {
				n = append(n, f.Name)
			}
			p := map[string]any{}
			var r []any
			for k, pm := range v.Functions[0].Parameters {
				p[k] = pm
				if pm["required"] == true {
					r = append(r, k)
				}
			}
			if pm := v.Functions[0].Parameters["schemaVersion"]; pm["type"] != "integer" {
				t.Errorf("bedrock schemaVersion parameter = %v", pm)
			}
			return n, p, r
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			code, out, errs := run(t, "tools", asyncTools, "--format", tc.format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			names, props, required := tc.names([]byte(out))
			if strings.Join(names, ",") != want {
				t.Errorf("tools = %v, want %s", names, want)
			}
			for _, f := range []string{"stackName", "ref", "schemaVersion", "idempotencyKey"} {
				if _, ok := props[f]; !ok {
					t.Errorf("start_cdk_synth has no %s argument", f)
				}
			}
			for _, f := range []string{"jobId", "trace_id"} {
				if _, ok := props[f]; ok {
					t.Errorf("start_cdk_synth takes %s, which the tool writes", f)
				}
			}
			var req []string
			for _, r := range required {
				req = append(req, r.(string))
			}
			if !strings.Contains(strings.Join(req, ","), "idempotencyKey") || !strings.Contains(strings.Join(req, ","), "stackName") {
				t.Errorf("required = %v", req)
			}
		})
	}
	if code, _, errs := run(t, "tools", "../../../examples/minimal/fleet.yaml"); code != exitInvalid || !strings.Contains(errs, "no async tool class") {
		t.Errorf("a fleet without async tools: exit %d %s", code, errs)
	}
}
