package runtimeconfig

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/fleetc/fleetc/compiler/ir"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// TraceField is the detail field carrying the trace id, which start_<class> writes.
const TraceField = "trace_id"

// RenderTools returns tools/tools.json: the async tool classes fleet-worker --mode tools
// serves.
func RenderTools(f *ir.Fleet) ([]byte, error) {
	t, err := BuildTools(f)
	if err != nil {
		return nil, err
	}
	return rc.MarshalTools(t)
}

// BuildTools returns the typed tools config of the fleet (an error when it has no async tool).
func BuildTools(f *ir.Fleet) (*rc.Tools, error) {
	if f == nil || f.Tools == nil {
		return nil, fmt.Errorf("the fleet has no async tool class")
	}
	t := &rc.Tools{FormatVersion: FormatVersion, Fleet: f.Name, Region: f.Region, Table: f.State.JobsTable,
		Bus: f.Bus.Name, ListTool: ir.ListJobsTool, Classes: []rc.ToolClass{}}
	for _, a := range f.Tools.Classes {
		if a.Consumes == nil {
			return nil, fmt.Errorf("async tool class %s consumes no event: nothing to start", a.Name)
		}
		e := a.Consumes.Event
		schema, err := json.Marshal(e.Detail)
		if err != nil {
			return nil, fmt.Errorf("%s: detail schema of %s: %w", a.Name, e.DetailType, err)
		}
		key := []string{}
		for _, k := range a.Idempotency.Key {
			if k != JobIDField && k != TraceField {
				key = append(key, k)
			}
		}
		slices.Sort(key)
		t.Classes = append(t.Classes, rc.ToolClass{
			Class: a.Name, Description: a.Description, StartTool: a.Tool.StartName, StatusTool: a.Tool.StatusName,
			Request: rc.ToolRequest{DetailType: e.DetailType, Source: e.Source, Version: e.Version, Schema: schema},
			IDField: JobIDField, TraceField: TraceField, IdempotencyKey: key,
			StatusPollAfterSeconds: ir.Seconds(a.Tool.StatusPollAfter),
			ExpirySeconds:          ir.Seconds(a.Idempotency.Window),
		})
	}
	if p := t.Check(); len(p) > 0 {
		return nil, fmt.Errorf("tools config: %v", p)
	}
	return t, nil
}
