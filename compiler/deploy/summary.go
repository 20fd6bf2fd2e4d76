package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/compiler/lifecycle"
	"github.com/fleetc/fleetc/compiler/terraform"
	"github.com/fleetc/fleetc/internal/genjson"
)

// Summary is a plan as fleetc reads it: changes per agent class and per plane, and every
// replacement and deletion with Terraform's reason and what it destroys.
type Summary struct {
	// Header is format_version and the diagnostics of the build planned (plan sets them).
	jsonreport.Header
	Groups            []GroupCount `json:"groups"`
	Changes           []Change     `json:"changes"`
	Add               int          `json:"add"`
	Change            int          `json:"change"`
	Destroy           int          `json:"destroy"`
	Endpoint          string       `json:"endpoint,omitempty"`
	Emulator          Emulator     `json:"emulator,omitempty"` // whose gap profile the override applied
	EmulatorOmissions []Omission   `json:"emulator_omissions,omitempty"`
	// region is the aws provider's region in the plan's configuration, for EmptyBuckets.
	region string
}

// GroupCount counts the changes of one agent class ("class researcher") or plane ("bus",
// "state", "workflows", "schemas", "keda", "provider").
type GroupCount struct {
	Group   string `json:"group"`
	Create  int    `json:"create"`
	Update  int    `json:"update"`
	Replace int    `json:"replace"`
	Delete  int    `json:"delete"`
}

// Change is one resource that the plan creates, updates, replaces or deletes.
type Change struct {
	Address string           `json:"address"`
	Group   string           `json:"group"`
	Action  lifecycle.Action `json:"action"`
	// Reason is Terraform's action_reason; ReplacePaths the attributes forcing a replacement.
	Reason       string   `json:"reason,omitempty"`
	ReplacePaths []string `json:"replace_paths,omitempty"`
	// Destroys says what is lost when a stateful resource is replaced or deleted.
	Destroys string `json:"destroys,omitempty"`
	// bucket and region name a deleted bucket (from the state), for EmptyBuckets.
	bucket, region string
	// object is a replaced object's prior state, for ConfigsToKeep.
	object *ConfigObject
}

// HasChanges reports whether applying the plan would change anything.
func (s *Summary) HasChanges() bool { return len(s.Changes) > 0 }

// Stateful returns the replacements and deletions that destroy data (queues with messages,
// tables with records, buckets, archives).
func (s *Summary) Stateful() []Change {
	var out []Change
	for _, c := range s.Changes {
		typ, _, _ := strings.Cut(c.Address, ".")
		if c.Destroys != "" && lifecycle.Stateful(typ) {
			out = append(out, c)
		}
	}
	return out
}

// Blocked returns the stateful replacements and deletions not named in allow.
func (s *Summary) Blocked(allow []string) []Change {
	ok := map[string]bool{}
	for _, a := range allow {
		ok[a] = true
	}
	var out []Change
	for _, c := range s.Stateful() {
		if !ok[c.Address] {
			out = append(out, c)
		}
	}
	return out
}

// Summarize reads a `terraform show -json` plan; groups maps resource addresses to their
// class or plane (Groups).
func Summarize(p *tfjson.Plan, groups map[string]string) *Summary {
	s := &Summary{Header: jsonreport.NewHeader(nil), Groups: []GroupCount{}, Changes: []Change{}, region: providerRegion(p)}
	counts := map[string]*GroupCount{}
	for _, rc := range p.ResourceChanges {
		if rc.Change == nil || rc.Mode == tfjson.DataResourceMode {
			continue
		}
		a := rc.Change.Actions
		c := Change{Address: rc.Address, Group: groupOf(groups, rc.Address), Reason: string(rc.ActionReason)}
		switch {
		case a.Replace():
			c.Action = lifecycle.Replace
			s.Add++
			s.Destroy++
		case a.Create():
			c.Action = lifecycle.Create
			s.Add++
		case a.Update():
			c.Action = lifecycle.Update
			s.Change++
		case a.Delete():
			c.Action = lifecycle.Delete
			s.Destroy++
		default:
			continue
		}
		if c.Action.Destructive() {
			c.Destroys = lifecycle.Destroys(rc.Type, rc.Name)
		}
		if c.Action == lifecycle.Delete && rc.Type == bucketType {
			c.bucket, c.region = stateString(rc.Change.Before, "bucket"), stateString(rc.Change.Before, "region")
		}
		if c.Action == lifecycle.Replace && rc.Type == terraform.ConfigObjectType {
			c.object = configObjectOf(rc.Change.Before)
		}
		for _, rp := range rc.Change.ReplacePaths {
			c.ReplacePaths = append(c.ReplacePaths, pathString(rp))
		}
		g := counts[c.Group]
		if g == nil {
			g = &GroupCount{Group: c.Group}
			counts[c.Group] = g
		}
		switch c.Action {
		case lifecycle.Create:
			g.Create++
		case lifecycle.Update:
			g.Update++
		case lifecycle.Replace:
			g.Replace++
		case lifecycle.Delete:
			g.Delete++
		}
		s.Changes = append(s.Changes, c)
	}
	for _, g := range counts {
		s.Groups = append(s.Groups, *g)
	}
	sort.Slice(s.Groups, func(i, j int) bool { return groupLess(s.Groups[i].Group, s.Groups[j].Group) })
	sort.SliceStable(s.Changes, func(i, j int) bool {
		if s.Changes[i].Group != s.Changes[j].Group {
			return groupLess(s.Changes[i].Group, s.Changes[j].Group)
		}
		return s.Changes[i].Address < s.Changes[j].Address
	})
	return s
}

// groupLess puts agent classes first, then planes, each alphabetically.
func groupLess(a, b string) bool {
	ca, cb := strings.HasPrefix(a, "class "), strings.HasPrefix(b, "class ")
	if ca != cb {
		return ca
	}
	return a < b
}

// pathString renders a replace path ([]any of names and indexes) as "a.b[0]".
func pathString(p any) string {
	parts, ok := p.([]any)
	if !ok {
		return fmt.Sprint(p)
	}
	var b strings.Builder
	for i, x := range parts {
		switch x := x.(type) {
		case string:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(x)
		default:
			fmt.Fprintf(&b, "[%v]", x)
		}
	}
	return b.String()
}

// Groups maps each resource address of the generated configuration to the spec part that
// owns it, as the Terraform backend recorded it (artifact.Set.Inventory): "class <name>",
// "workflow <name>", "event <detail-type>", or a plane (bus, state, events, eks, provider).
//
// A resource no longer generated (a deletion) keeps the owner the previous inventory of the
// same output directory recorded (prev, from ReadInventory; nil when there is none).
func Groups(set *artifact.Set, prev []artifact.Resource) (map[string]string, error) {
	inv := set.Inventory()
	if len(inv) == 0 {
		return nil, fmt.Errorf("the generated configuration carries no resource inventory")
	}
	g := map[string]string{}
	for _, r := range prev {
		g[r.Address] = r.Part
	}
	for _, r := range inv {
		g[r.Address] = r.Part
	}
	return g, nil
}

// InventoryFile is where plan and apply keep the inventory of the configuration they last
// wrote, beside the manifest, so that the next plan knows the owner of what it deletes.
const InventoryFile = ".fleetc-inventory.json"

type inventoryDoc struct {
	FormatVersion int                 `json:"format_version"`
	Resources     []artifact.Resource `json:"resources"`
}

// ReadInventory reads the inventory an earlier plan or apply kept in dir; none is nil.
func ReadInventory(dir string) ([]artifact.Resource, error) {
	b, err := artifact.ReadFileIn(dir, InventoryFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc inventoryDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, InventoryFile), err)
	}
	return doc.Resources, nil
}

// WriteInventory keeps the set's inventory in dir for the next plan.
func WriteInventory(dir string, set *artifact.Set) error {
	b, err := genjson.Encode(inventoryDoc{FormatVersion: jsonreport.FormatVersion, Resources: set.Inventory()})
	if err != nil {
		return err
	}
	return artifact.WriteFileIn(dir, InventoryFile, b)
}

var instanceKey = regexp.MustCompile(`\[[^\]]*\]$`)

// groupOf is the class or plane of addr, as an inventory recorded it; "removed" for a
// resource neither the configuration nor the previous inventory knows.
func groupOf(groups map[string]string, addr string) string {
	if g, ok := groups[instanceKey.ReplaceAllString(addr, "")]; ok {
		return g
	}
	return "removed"
}

// WriteText prints the summary as fleetc plan's text: one line per class and plane, every
// replacement and deletion, the emulator's omissions, and Terraform's closing line.
func (s *Summary) WriteText(w io.Writer) {
	if !s.HasChanges() {
		fmt.Fprintln(w, "No changes. The fleet's infrastructure matches the configuration.")
		s.writeOmissions(w)
		return
	}
	width := 0
	for _, g := range s.Groups {
		width = max(width, len(g.Group))
	}
	for _, g := range s.Groups {
		fmt.Fprintf(w, "  %-*s  %s\n", width, g.Group, counts(g))
	}
	var risky, updates []string
	for _, c := range s.Changes {
		switch c.Action {
		case lifecycle.Replace, lifecycle.Delete:
			risky = append(risky, c.Address)
		case lifecycle.Update:
			updates = append(updates, c.Address)
		}
	}
	if len(updates) > 0 {
		fmt.Fprintf(w, "\nUpdated in place: %s\n", strings.Join(updates, ", "))
	}
	if len(risky) > 0 {
		fmt.Fprintln(w, "\nReplacements and deletions:")
		for _, c := range s.Changes {
			if !c.Action.Destructive() {
				continue
			}
			fmt.Fprintf(w, "  %s %s (%s)", c.Action, c.Address, c.Group)
			if len(c.ReplacePaths) > 0 {
				fmt.Fprintf(w, ": %s forces replacement", strings.Join(c.ReplacePaths, ", "))
			}
			if c.Reason != "" {
				fmt.Fprintf(w, " [%s]", c.Reason)
			}
			fmt.Fprintln(w)
			typ, _, _ := strings.Cut(c.Address, ".")
			switch {
			case c.Destroys != "" && lifecycle.Stateful(typ):
				fmt.Fprintf(w, "      destroys %s; apply needs --allow-replace %s\n", c.Destroys, c.Address)
			case c.Destroys != "":
				fmt.Fprintf(w, "      destroys %s\n", c.Destroys)
			}
		}
	}
	s.writeOmissions(w)
	fmt.Fprintf(w, "\nPlan: %d to add, %d to change, %d to destroy.\n", s.Add, s.Change, s.Destroy)
}

func counts(g GroupCount) string {
	return lifecycle.Tally(map[lifecycle.Action]int{lifecycle.Create: g.Create, lifecycle.Update: g.Update, lifecycle.Replace: g.Replace, lifecycle.Delete: g.Delete})
}

// emulatorName is the emulator as the summary names it: "kumo at http://127.0.0.1:4566".
func (s *Summary) emulatorName() string {
	if s.Emulator == "" {
		return s.Endpoint
	}
	return fmt.Sprintf("%s at %s", s.Emulator, s.Endpoint)
}

func (s *Summary) writeOmissions(w io.Writer) {
	if s.Endpoint == "" {
		return
	}
	fmt.Fprintf(w, "\nEmulator %s: %s (never applied to AWS) leaves out or changes:\n", s.emulatorName(), OverrideFile)
	type key struct{ gap, what string }
	var order []key
	addrs := map[key][]string{}
	for _, o := range s.EmulatorOmissions {
		k := key{o.Gap, o.What}
		if addrs[k] == nil {
			order = append(order, k)
		}
		addrs[k] = append(addrs[k], o.Address)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].gap < order[j].gap })
	for _, k := range order {
		fmt.Fprintf(w, "  [%s] %s: %s\n", k.gap, k.what, strings.Join(addrs[k], ", "))
	}
}

// WriteMarkdown prints the plan as a pull-request comment in the layout of `fleetc diff`'s: a
// verdict line with the stateful guard's answer, the changes per class and plane, every
// replacement and deletion with what it destroys, then the whole plan collapsed.
func (s *Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	blocked := s.Blocked(nil)
	switch {
	case !s.HasChanges():
		b.WriteString("### ✅ fleetc plan: no changes\n\nThe fleet's infrastructure matches the configuration.\n")
	case len(blocked) > 0:
		fmt.Fprintf(&b, "### 🛑 fleetc plan: apply refuses %d stateful replacement(s) or deletion(s) until named with --allow-replace\n\n", len(blocked))
	default:
		b.WriteString("### ⚠️ fleetc plan: changes to apply, nothing stateful destroyed\n\n")
	}
	if s.HasChanges() {
		fmt.Fprintf(&b, "Plan: %d to add, %d to change, %d to destroy.\n\n", s.Add, s.Change, s.Destroy)
		b.WriteString("| class or plane | create | update | replace | delete |\n|---|---:|---:|---:|---:|\n")
		for _, g := range s.Groups {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", mdCell(g.Group), g.Create, g.Update, g.Replace, g.Delete)
		}
		b.WriteString("\n")
	}
	var risky []Change
	for _, c := range s.Changes {
		if c.Action.Destructive() {
			risky = append(risky, c)
		}
	}
	if len(risky) > 0 {
		fmt.Fprintf(&b, "<details open><summary><b>replacements and deletions</b> (%d)</summary>\n\n| | address | class or plane | why | destroys |\n|---|---|---|---|---|\n", len(risky))
		for _, c := range risky {
			icon, why := "ℹ️", string(c.Action)
			if len(c.ReplacePaths) > 0 {
				why += ": " + strings.Join(c.ReplacePaths, ", ") + " forces replacement"
			}
			if c.Reason != "" {
				why += " (" + c.Reason + ")"
			}
			destroys := c.Destroys
			typ, _, _ := strings.Cut(c.Address, ".")
			if c.Destroys != "" && lifecycle.Stateful(typ) {
				icon = "🛑"
				destroys += "; apply needs `--allow-replace " + c.Address + "`"
			} else if c.Destroys != "" {
				icon = "⚠️"
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", icon, c.Address, mdCell(c.Group), mdCell(why), mdCell(destroys))
		}
		b.WriteString("\n</details>\n\n")
	}
	if s.HasChanges() {
		fmt.Fprintf(&b, "<details><summary>Terraform plan (%d to add, %d to change, %d to destroy)</summary>\n\n| action | address | class or plane |\n|---|---|---|\n", s.Add, s.Change, s.Destroy)
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", c.Action, c.Address, mdCell(c.Group))
		}
		b.WriteString("\n</details>\n\n")
	}
	if s.Endpoint != "" && len(s.EmulatorOmissions) > 0 {
		fmt.Fprintf(&b, "<details><summary>Emulator %s leaves out or changes (%d)</summary>\n\n", s.emulatorName(), len(s.EmulatorOmissions))
		for _, o := range s.EmulatorOmissions {
			fmt.Fprintf(&b, "- [%s] `%s`: %s\n", o.Gap, o.Address, mdCell(o.What))
		}
		b.WriteString("\n</details>\n\n")
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// mdCell keeps text inside one Markdown table cell.
func mdCell(s string) string { return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s) }

// stateString is a string attribute of a resource's state in a plan ("" when absent).
func stateString(state any, attr string) string {
	m, _ := state.(map[string]any)
	v, _ := m[attr].(string)
	return v
}

// providerRegion is the region the plan's aws provider block sets as a constant ("" when it
// sets none or computes it).
func providerRegion(p *tfjson.Plan) string {
	if p.Config == nil || p.Config.ProviderConfigs["aws"] == nil {
		return ""
	}
	e := p.Config.ProviderConfigs["aws"].Expressions["region"]
	if e == nil || e.ExpressionData == nil {
		return ""
	}
	r, _ := e.ConstantValue.(string)
	return r
}
