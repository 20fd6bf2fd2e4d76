package review

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/jsonreport"
)

// FormatVersion is the version of the JSON report (fleetc's one format_version).
const FormatVersion = jsonreport.FormatVersion

// Formats the report renders to.
var Formats = []string{"text", "markdown", "json", "github-actions"}

// Render writes the report in one of Formats.
func (r *Report) Render(w io.Writer, format string) error {
	switch format {
	case "markdown":
		return r.markdown(w)
	case "json":
		return r.json(w)
	case "github-actions":
		return r.githubActions(w)
	}
	return r.text(w)
}

func where(c Change) string {
	if c.Position == nil {
		return ""
	}
	return c.Position.String()
}

func (r *Report) text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fleetc diff %s → %s: %s\n", r.Base, r.Head, r.Verdict())
	if r.Incomplete != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Incomplete)
	}
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "\n%s %s: %s: %s\n", c.Category, c.Severity, c.Subject, c.Summary)
		if c.Detail != "" {
			fmt.Fprintf(&b, "    %s\n", c.Detail)
		}
		if loc := where(c); loc != "" {
			fmt.Fprintf(&b, "    at %s\n", loc)
		}
	}
	if r.Resources != nil || r.Incomplete == "" {
		fmt.Fprintf(&b, "\nTerraform, predicted: %s.\n", summarizeActions(r.Resources))
		textInputs(&b, r.Resources)
	}
	if !r.Capacity.Empty() {
		b.WriteString("\nCapacity, head against base:\n")
		for _, l := range r.Capacity.Lines() {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if len(r.Kubernetes) > 0 {
		fmt.Fprintf(&b, "\nKubernetes, predicted: %s.\n", summarizeActions(r.Kubernetes))
		for _, rc := range r.Kubernetes {
			fmt.Fprintf(&b, "  %s %s", rc.Action, rc.Address)
			if len(rc.Reasons) > 0 {
				fmt.Fprintf(&b, ": %s", strings.Join(rc.Reasons, "; "))
			}
			b.WriteString("\n")
		}
		textInputs(&b, r.Kubernetes)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// textInputs prints what changed in the files behind updated arguments.
func textInputs(b *strings.Builder, rcs []ResourceChange) {
	for _, rc := range rcs {
		for _, in := range rc.Inputs {
			if rc.Type == "k8s" {
				fmt.Fprintf(b, "  %s (%s):\n", rc.Address, in.File)
			} else {
				fmt.Fprintf(b, "  %s reads %s, which changes:\n", rc.Address, in.File)
			}
			for _, c := range in.Changes {
				fmt.Fprintf(b, "      %s\n", c)
			}
		}
	}
}

// mdInputs renders input changes for a table cell.
func mdInputs(rc ResourceChange) string {
	var parts []string
	for _, in := range rc.Inputs {
		lines := make([]string, len(in.Changes))
		for i, c := range in.Changes {
			lines[i] = "`" + strings.ReplaceAll(mdCell(c), "`", "'") + "`"
		}
		parts = append(parts, fmt.Sprintf("%s: %s", in.File, strings.Join(lines, "<br/>")))
	}
	return strings.Join(parts, "<br/>")
}

var severityIcon = map[Severity]string{Error: "🛑", Warning: "⚠️", Info: "ℹ️"}

func (r *Report) markdown(w io.Writer) error {
	var b strings.Builder
	icon := "✅"
	switch {
	case strings.HasPrefix(r.Verdict(), "blocking"):
		icon = "🛑"
	case strings.HasPrefix(r.Verdict(), "needs review"):
		icon = "⚠️"
	}
	fmt.Fprintf(&b, "### %s fleetc diff: %s\n\n", icon, r.Verdict())
	fmt.Fprintf(&b, "`%s` → `%s`", r.Base, r.Head)
	if r.Resources != nil || r.Incomplete == "" {
		fmt.Fprintf(&b, " · Terraform, predicted: %s", summarizeActions(r.Resources))
	}
	if len(r.Kubernetes) > 0 {
		fmt.Fprintf(&b, " · Kubernetes, predicted: %s", summarizeActions(r.Kubernetes))
	}
	b.WriteString("\n\n")
	if r.Incomplete != "" {
		fmt.Fprintf(&b, "> **Note:** %s\n\n", r.Incomplete)
	}
	if len(r.Changes) == 0 {
		r.mdCapacity(&b)
		_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
		return err
	}

	b.WriteString("| category | 🛑 error | ⚠️ warning | ℹ️ info |\n|---|---:|---:|---:|\n")
	for _, cat := range Categories {
		n := map[Severity]int{}
		for _, c := range r.Changes {
			if c.Category == cat {
				n[c.Severity]++
			}
		}
		if n[Error]+n[Warning]+n[Info] == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", cat, n[Error], n[Warning], n[Info])
	}
	b.WriteString("\n")

	if g, marked := r.affected(); g != nil && len(g.Nodes) > 0 {
		b.WriteString("<details open><summary>Affected topology (changed parts outlined in red)</summary>\n\n```mermaid\n")
		if err := g.Mermaid(&b, marked); err != nil {
			return err
		}
		b.WriteString("```\n\n</details>\n\n")
	}

	for _, cat := range Categories {
		var rows []Change
		for _, c := range r.Changes {
			if c.Category == cat {
				rows = append(rows, c)
			}
		}
		if len(rows) == 0 {
			continue
		}
		open := ""
		if cat == Replacement || cat == Contract || cat == Security {
			open = " open"
		}
		fmt.Fprintf(&b, "<details%s><summary><b>%s</b> (%d)</summary>\n\n| | subject | change | where |\n|---|---|---|---|\n", open, cat, len(rows))
		for _, c := range rows {
			text := mdCell(c.Summary)
			if c.Detail != "" {
				text += "<br/><sub>" + mdCell(c.Detail) + "</sub>"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", severityIcon[c.Severity], mdCell(c.Subject), text, mdCell(where(c)))
		}
		b.WriteString("\n</details>\n\n")
	}
	r.mdCapacity(&b)
	for _, plan := range []struct {
		title string
		rcs   []ResourceChange
	}{{"Predicted Terraform plan", r.Resources}, {"Predicted Kubernetes changes (eks classes)", r.Kubernetes}} {
		if len(plan.rcs) == 0 {
			continue
		}
		open := ""
		for _, rc := range plan.rcs {
			if len(rc.Inputs) > 0 {
				open = " open" // a config or definition changes in place: worth reading
			}
		}
		fmt.Fprintf(&b, "<details%s><summary>%s (%s)</summary>\n\n| action | address | why |\n|---|---|---|\n", open, plan.title, summarizeActions(plan.rcs))
		for _, rc := range plan.rcs {
			why := mdCell(strings.Join(rc.Reasons, "; "))
			if in := mdInputs(rc); in != "" && why != "" {
				why += "<br/>" + in
			} else if in != "" {
				why = in
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", rc.Action, rc.Address, why)
		}
		b.WriteString("\n</details>\n\n")
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// mdCapacity writes the capacity delta, open: quotas and cost are what a reviewer of a
// traffic or topology change reads first.
func (r *Report) mdCapacity(b *strings.Builder) {
	if r.Capacity.Empty() {
		return
	}
	fmt.Fprintf(b, "<details open><summary>Capacity, head against base (each under its own traffic)</summary>\n\n%s\n</details>\n\n", r.Capacity.Markdown())
}

// mdCell keeps text inside one Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// affected is the part of the head's topology the changes touch, with the touched nodes
// marked. Nodes that exist only in the base (a removed class) are drawn from the base.
func (r *Report) affected() (*graph.Graph, graph.Marked) {
	if r.headGraph == nil {
		return nil, nil
	}
	var keys []string
	for _, c := range r.Changes {
		keys = append(keys, c.nodes...)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	g := r.headGraph.Around(keys)
	marked := graph.Marked{}
	for _, k := range keys {
		if n, ok := r.headGraph.Node(k); ok {
			marked[n.ID] = true
		}
	}
	return g, marked
}

type jsonReport struct {
	jsonreport.Header
	Base       string           `json:"base"`
	Head       string           `json:"head"`
	Verdict    string           `json:"verdict"`
	Incomplete string           `json:"incomplete,omitempty"`
	Summary    map[Category]int `json:"summary"`
	Changes    []Change         `json:"changes"`
	Resources  []ResourceChange `json:"resources"`
	Kubernetes []ResourceChange `json:"kubernetes"`
	Capacity   *capacity.Delta  `json:"capacity"` // null when a side did not build
}

func (r *Report) json(w io.Writer) error {
	jr := jsonReport{Header: jsonreport.NewHeader(r.headDiags), Base: r.Base, Head: r.Head, Verdict: r.Verdict(),
		Incomplete: r.Incomplete, Summary: r.Count(), Changes: r.Changes, Resources: r.Resources, Kubernetes: r.Kubernetes, Capacity: r.Capacity}
	if jr.Changes == nil {
		jr.Changes = []Change{}
	}
	if jr.Resources == nil {
		jr.Resources = []ResourceChange{}
	}
	if jr.Kubernetes == nil {
		jr.Kubernetes = []ResourceChange{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jr)
}

// githubActions prints workflow commands: each change becomes an annotation on the spec
// line it lives on (errors and warnings as such, info as notices).
func (r *Report) githubActions(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Changes {
		level := map[Severity]string{Error: "error", Warning: "warning", Info: "notice"}[c.Severity]
		props := []string{"title=" + ghProperty(fmt.Sprintf("fleetc diff: %s (%s)", c.Category, c.Subject))}
		if c.Position != nil {
			props = append([]string{
				"file=" + ghProperty(c.Position.Filename),
				fmt.Sprintf("line=%d", c.Position.Start.Line),
				fmt.Sprintf("col=%d", c.Position.Start.Column),
			}, props...)
		}
		msg := c.Summary
		if c.Detail != "" {
			msg += "\n" + c.Detail
		}
		fmt.Fprintf(&b, "::%s %s::%s\n", level, strings.Join(props, ","), ghMessage(msg))
	}
	fmt.Fprintf(&b, "fleetc diff: %s\n", r.Verdict())
	_, err := io.WriteString(w, b.String())
	return err
}

// GitHub's workflow-command escaping: % \r \n in messages, and also : , in properties.
func ghMessage(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
