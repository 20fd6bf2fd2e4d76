package runtimeconfig

import (
	"encoding/json"
	"fmt"

	"github.com/fleetc/fleetc/schemas/jobs"
)

// Tool argument limits and names shared by the tool definitions (fleetc tools, the MCP
// server's tools/list) and the tools runtime that enforces them.
const (
	// ArgIdempotencyKey is start_*'s explicit idempotency key; MinIdempotencyKey its least
	// length (the seed's z.string().min(8)).
	ArgIdempotencyKey = "idempotencyKey"
	MinIdempotencyKey = 8
	// ArgJobID is get_*_status's one argument.
	ArgJobID = "jobId"
	// ListDefault and ListMax bound one list_my_jobs page.
	ListDefault = 20
	ListMax     = 100
)

// ToolDefinition is one tool as a model sees it: a name, what it does, and the JSON Schema
// of its arguments.
type ToolDefinition struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

// Definitions returns the three tools per async class (start, status; one list for all),
// in class order, list last. The start tool's schema is the request event's detail schema
// without the fields the tool writes (id, trace), plus idempotencyKey.
func (t *Tools) Definitions() ([]ToolDefinition, error) {
	var out []ToolDefinition
	for _, c := range t.Classes {
		var schema map[string]any
		if err := json.Unmarshal(c.Request.Schema, &schema); err != nil {
			return nil, fmt.Errorf("%s: request schema: %w", c.Class, err)
		}
		props, _ := schema["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		delete(props, c.IDField)
		delete(props, c.TraceField)
		var required []any
		if r, ok := schema["required"].([]any); ok {
			for _, f := range r {
				if f != c.IDField && f != c.TraceField {
					required = append(required, f)
				}
			}
		}
		keyDesc := fmt.Sprintf("Makes the start idempotent: the same key returns the same job instead of starting a second one (at least %d characters).", MinIdempotencyKey)
		if len(c.IdempotencyKey) == 0 {
			required = append(required, ArgIdempotencyKey)
		} else {
			keyDesc += fmt.Sprintf(" Optional: by default the key is made of %v.", c.IdempotencyKey)
		}
		props[ArgIdempotencyKey] = map[string]any{"type": "string", "minLength": MinIdempotencyKey, "description": keyDesc}
		schema["properties"] = props
		schema["type"] = "object"
		if len(required) > 0 {
			schema["required"] = required
		} else {
			delete(schema, "required")
		}
		delete(schema, "$schema")
		desc := c.Description
		if desc != "" {
			desc += " "
		}
		poll := c.StatusPollAfterSeconds
		out = append(out,
			ToolDefinition{Name: c.StartTool, InputSchema: schema, Description: desc + fmt.Sprintf(
				"Starts the job and returns at once with its jobId (status QUEUED); the work runs off the conversation. "+
					"Then call %s after pollAfterSec (%d s). Tell the user the short job id. "+
					"Do not start a second job unless the status is FAILED and the user confirms.", c.StatusTool, poll)},
			ToolDefinition{Name: c.StatusTool, Description: fmt.Sprintf(
				"Reads one %s job: status (QUEUED, RUNNING, SUCCEEDED, FAILED, FAILED_TO_START), its artifact or error, and resumeHint: "+
					"poll (call again after pollAfterSec), continue (the result is ready) or replan (it failed).", c.Class),
				InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []any{ArgJobID},
					"properties": map[string]any{ArgJobID: map[string]any{"type": "string", "description": "The jobId " + c.StartTool + " returned."}}}},
		)
	}
	statuses := make([]any, len(jobs.Statuses))
	for i, s := range jobs.Statuses {
		statuses[i] = string(s)
	}
	out = append(out, ToolDefinition{Name: t.ListTool,
		Description: "Lists the caller's async jobs in this conversation, newest first, to find a job again after a refresh. Optional status filter; pass nextToken to page.",
		InputSchema: map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
			"status":    map[string]any{"type": "string", "enum": statuses, "description": "Only jobs in this status."},
			"limit":     map[string]any{"type": "integer", "minimum": 1, "maximum": ListMax, "description": fmt.Sprintf("Jobs per page (default %d).", ListDefault)},
			"nextToken": map[string]any{"type": "string", "description": "The nextToken of the previous page."},
		}}})
	return out, nil
}
