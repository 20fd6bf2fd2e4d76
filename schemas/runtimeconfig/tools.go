package runtimeconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fleetc/fleetc/internal/genjson"
)

// ToolsFile is where the compiler writes the tools config under the output root.
const ToolsFile = "tools/tools.json"

// AsyncToolPrefix marks an llm handler tool that offers an async class's tools to the model:
// "async:<class>" (the compiler's rule T002 and the llm handler read it with ParseAsyncTool).
const AsyncToolPrefix = "async:"

// ParseAsyncTool reads one llm handler tool. ok says the tool is "async:<class>" (a
// "name=async:<class>" too, which err refuses: the class's tools keep their own names); err
// also refuses an empty class. Other tools ("[name=]https://…", "[name=]event:<type>") are
// not ok and not an error.
func ParseAsyncTool(tool string) (class string, ok bool, err error) {
	name, target, named := strings.Cut(tool, "=")
	if !named || strings.Contains(name, ":") {
		target, named = tool, false
	}
	class, ok = strings.CutPrefix(target, AsyncToolPrefix)
	if !ok {
		return "", false, nil
	}
	if named || class == "" {
		return class, true, fmt.Errorf("tool %q: want %s<class> (the tools are named by the class)", tool, AsyncToolPrefix)
	}
	return class, true, nil
}

// Only returns the tools config restricted to the named classes (in t's order), for an llm
// class that offers only those: nil when none of them is in t.
func (t *Tools) Only(classes []string) *Tools {
	out := *t
	out.Classes = nil
	for _, c := range t.Classes {
		for _, n := range classes {
			if c.Class == n {
				out.Classes = append(out.Classes, c)
				break
			}
		}
	}
	if len(out.Classes) == 0 {
		return nil
	}
	return &out
}

// Tools is tools/tools.json: what fleet-worker --mode tools serves, for every async tool
// class of the fleet (start_<class>, get_<class>_status, and one list_my_jobs).
type Tools struct {
	FormatVersion int    `json:"format_version"`
	Fleet         string `json:"fleet"`
	Region        string `json:"region"`
	// Table is the jobs table; its OwnerIndex (schemas/jobs) serves list_my_jobs.
	Table string `json:"table"`
	Bus   string `json:"bus"`
	// ListTool is the name of the job list tool (list_my_jobs).
	ListTool string      `json:"list_tool"`
	Classes  []ToolClass `json:"classes"`
}

// ToolClass is one async tool class.
type ToolClass struct {
	Class       string `json:"class"`
	Description string `json:"description"`
	StartTool   string `json:"start_tool"`
	StatusTool  string `json:"status_tool"`
	// Request is the event start_<class> publishes; its detail schema is what the
	// arguments are checked against (with IDField and TraceField filled by the tool).
	Request ToolRequest `json:"request"`
	// IDField is the detail field carrying the job id; TraceField the trace id (both
	// written by the tool, never taken from the arguments).
	IDField    string `json:"id_field"`
	TraceField string `json:"trace_field"`
	// IdempotencyKey are the detail fields whose values make the start idempotent (the
	// class's idempotency.key minus the tool-written fields); empty: the caller passes an
	// explicit idempotencyKey.
	IdempotencyKey         []string `json:"idempotency_key"`
	StatusPollAfterSeconds int64    `json:"status_poll_after_seconds"`
	// ExpirySeconds is how long a job record lives (the table's TTL): the class's
	// idempotency window, so a repeated start within it finds the same job.
	ExpirySeconds int64 `json:"expiry_seconds"`
}

// ToolRequest is the request event of a tool class.
type ToolRequest struct {
	DetailType string   `json:"detail_type"`
	Source     string   `json:"source"`
	Version    int      `json:"version"`
	Schema     Document `json:"schema"`
}

// StatusPollAfter as a duration.
func (c ToolClass) StatusPollAfter() time.Duration { return seconds(c.StatusPollAfterSeconds) }

// Expiry as a duration.
func (c ToolClass) Expiry() time.Duration { return seconds(c.ExpirySeconds) }

// MarshalTools returns the canonical bytes of t (sorted keys, two-space indent, newline).
func MarshalTools(t *Tools) ([]byte, error) { return genjson.Canonical(t) }

// ParseTools reads and checks a tools config. Unknown fields are refused: a config written
// by a newer compiler must not be half understood.
func ParseTools(name string, raw []byte) (*Tools, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var t Tools
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p := t.Check(); len(p) > 0 {
		return nil, &Error{Path: name, Problems: p}
	}
	return &t, nil
}

// Check lists what makes t unusable (empty: none).
func (t *Tools) Check() []string {
	var p []string
	if t.FormatVersion != FormatVersion {
		p = append(p, fmt.Sprintf("/format_version: %d, want %d", t.FormatVersion, FormatVersion))
	}
	for _, f := range []struct{ at, v string }{{"/region", t.Region}, {"/table", t.Table}, {"/bus", t.Bus}, {"/list_tool", t.ListTool}} {
		if f.v == "" {
			p = append(p, f.at+": required")
		}
	}
	if len(t.Classes) == 0 {
		p = append(p, "/classes: at least one async tool class")
	}
	names := map[string]bool{t.ListTool: true}
	for i, c := range t.Classes {
		at := fmt.Sprintf("/classes/%d", i)
		for _, n := range []string{c.StartTool, c.StatusTool} {
			if n == "" || names[n] {
				p = append(p, fmt.Sprintf("%s: tool name %q is empty or used twice", at, n))
			}
			names[n] = true
		}
		if c.Request.DetailType == "" || c.Request.Source == "" || len(c.Request.Schema) == 0 {
			p = append(p, at+"/request: detail_type, source and schema are required")
		}
		if c.IDField == "" || c.TraceField == "" {
			p = append(p, at+": id_field and trace_field are required")
		}
		if c.StatusPollAfterSeconds <= 0 || c.ExpirySeconds <= 0 {
			p = append(p, at+": status_poll_after_seconds and expiry_seconds must be positive")
		}
	}
	return p
}
