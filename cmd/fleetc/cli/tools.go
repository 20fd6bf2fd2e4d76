package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// Tool definition formats of fleetc tools.
const (
	toolsFormatJSON    = "json"
	toolsFormatOpenAI  = "openai"
	toolsFormatBedrock = "bedrock"
	toolsFormatMCP     = "mcp"
)

// bedrockTypes are the parameter types a Bedrock action group's function schema accepts.
var bedrockTypes = []string{"string", "number", "integer", "boolean", "array"}

func newToolsCmd(s *streams) *cobra.Command {
	format := newFormat(toolsFormatJSON, toolsFormatJSON, toolsFormatOpenAI, toolsFormatBedrock, toolsFormatMCP)
	c := &cobra.Command{
		Use:   "tools FILE [--format json|openai|bedrock|mcp]",
		Short: "Print the async tools of a fleet as tool definitions for a model",
		Long: `Tools prints three tools per async class (agents.<class>.tool.async): start_<class>, whose
arguments are the JSON Schema of the class's request event without the fields the tool writes
(jobId, trace_id) plus idempotencyKey; get_<class>_status; and one list_my_jobs. Descriptions
come from the spec. These are the definitions fleet-worker --mode tools serves over MCP.

Formats: json (fleetc's own), openai (function calling), bedrock (an action group's function
schema), mcp (a tools/list result).

Arguments:
  FILE  the fleet.yaml`,
		Example: `  fleetc tools fleet.yaml --format openai > tools.json
  fleetc tools fleet.yaml --format bedrock`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runTools(args, s.env, format.value, s.stdout, s.stderr))
		},
	}
	addFormat(c, format, "")
	return c
}

// runTools prints the async tools of a fleet (start_*, get_*_status, list_my_jobs) as tool
// definitions: the same ones fleet-worker --mode tools serves over MCP.
func runTools(files []string, env, format string, stdout, stderr io.Writer) int {
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc tools: name exactly one fleet.yaml")
		return exitUsage
	}
	_, fleet, ds := compiler.LoadEnv(files[0], env)
	if fleet == nil || ds.HasErrors() {
		render(stderr, "text", ds, judge(ds, false))
		return exitInvalid
	}
	if fleet.Tools == nil {
		fmt.Fprintf(stderr, "fleetc tools: %s has no async tool class (agents.<class>.tool.async)\n", files[0])
		return exitInvalid
	}
	cfg, err := runtimeconfig.BuildTools(fleet)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc tools: %v\n", err)
		return exitUsage
	}
	defs, err := cfg.Definitions()
	if err != nil {
		fmt.Fprintf(stderr, "fleetc tools: %v\n", err)
		return exitUsage
	}
	var out any
	switch format {
	case toolsFormatOpenAI:
		var fns []map[string]any
		for _, d := range defs {
			fns = append(fns, map[string]any{"type": "function", "function": map[string]any{"name": d.Name, "description": d.Description, "parameters": d.InputSchema}})
		}
		out = fns
	case toolsFormatBedrock:
		out = map[string]any{"functions": bedrockFunctions(defs)}
	case toolsFormatMCP:
		var tools []map[string]any
		for _, d := range defs {
			tools = append(tools, map[string]any{"name": d.Name, "description": d.Description, "inputSchema": d.InputSchema})
		}
		out = map[string]any{"tools": tools}
	default:
		out = map[string]any{"format_version": jsonreport.FormatVersion, "fleet": fleet.Name, "tools": defs}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "fleetc tools: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// bedrockFunctions flattens each tool's arguments into a Bedrock function schema: one
// parameter per top-level property, typed when the type is one Bedrock knows (else string,
// carrying JSON), required as the schema says. The tools runtime decodes typed values back.
func bedrockFunctions(defs []rc.ToolDefinition) []map[string]any {
	var out []map[string]any
	for _, d := range defs {
		props, _ := d.InputSchema["properties"].(map[string]any)
		required := map[string]bool{}
		if r, ok := d.InputSchema["required"].([]any); ok {
			for _, f := range r {
				if s, ok := f.(string); ok {
					required[s] = true
				}
			}
		}
		params := map[string]any{}
		for name, p := range props {
			pm, _ := p.(map[string]any)
			typ, _ := pm["type"].(string)
			if !slices.Contains(bedrockTypes, typ) {
				typ = "string"
			}
			desc, _ := pm["description"].(string)
			if desc == "" {
				b, _ := json.Marshal(pm)
				desc = "JSON Schema: " + string(b)
			}
			params[name] = map[string]any{"type": typ, "description": desc, "required": required[name]}
		}
		out = append(out, map[string]any{"name": d.Name, "description": d.Description, "parameters": params})
	}
	return out
}
