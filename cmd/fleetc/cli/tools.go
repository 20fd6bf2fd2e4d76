package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/internal/genjson"
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
		view.Stopped(format, stdout, stderr, ds)
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
		var fns []openAITool
		for _, d := range defs {
			fns = append(fns, openAITool{Function: openAIFunction{Description: d.Description, Name: d.Name, Parameters: d.InputSchema}, Type: "function"})
		}
		out = fns
	case toolsFormatBedrock:
		out = bedrockGroup{Functions: bedrockFunctions(defs)}
	case toolsFormatMCP:
		var tools []mcpTool
		for _, d := range defs {
			tools = append(tools, mcpTool{Description: d.Description, InputSchema: d.InputSchema, Name: d.Name})
		}
		out = mcpList{Tools: tools}
	default:
		out = toolsDoc{Header: jsonreport.NewHeader(ds), Fleet: fleet.Name, Tools: defs}
	}
	if format != toolsFormatJSON {
		view.Aside(stderr, ds) // a foreign format has no room for them
	}
	b, err := genjson.Encode(out)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc tools: %v\n", err)
		return exitUsage
	}
	stdout.Write(b)
	return exitOK
}

// toolsDoc is fleetc's own tools document (schemas/output/tools.schema.json).
type toolsDoc struct {
	jsonreport.Header
	Fleet string              `json:"fleet"`
	Tools []rc.ToolDefinition `json:"tools"`
}

// The foreign formats are typed as their owners document them; fields are in alphabetical
// order, as the maps these replaced printed them.

// openAITool is a function-calling tool (OpenAI's "tools" array).
type openAITool struct {
	Function openAIFunction `json:"function"`
	Type     string         `json:"type"`
}

type openAIFunction struct {
	Description string         `json:"description"`
	Name        string         `json:"name"`
	Parameters  map[string]any `json:"parameters"`
}

// mcpList is an MCP tools/list result.
type mcpList struct {
	Tools []mcpTool `json:"tools"`
}

type mcpTool struct {
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	Name        string         `json:"name"`
}

// bedrockGroup is a Bedrock action group's function schema.
type bedrockGroup struct {
	Functions []bedrockFunction `json:"functions"`
}

type bedrockFunction struct {
	Description string                  `json:"description"`
	Name        string                  `json:"name"`
	Parameters  map[string]bedrockParam `json:"parameters"`
}

type bedrockParam struct {
	Description string `json:"description"`
	Required    bool   `json:"required"`
	Type        string `json:"type"`
}

// bedrockFunctions flattens each tool's arguments into a Bedrock function schema: one
// parameter per top-level property, typed when the type is one Bedrock knows (else string,
// carrying JSON), required as the schema says. The tools runtime decodes typed values back.
func bedrockFunctions(defs []rc.ToolDefinition) []bedrockFunction {
	var out []bedrockFunction
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
		params := map[string]bedrockParam{}
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
			params[name] = bedrockParam{Description: desc, Required: required[name], Type: typ}
		}
		out = append(out, bedrockFunction{Description: d.Description, Name: d.Name, Parameters: params})
	}
	return out
}
