package terraform

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/fleetc/fleetc/compiler/cwdashboard"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// dashboardJSON evaluates the generated dashboard_body expression as Terraform would
// (jsonencode, with each state machine's arn), and returns the JSON string it produces.
func dashboardJSON(t *testing.T, f *ir.Fleet) string {
	t.Helper()
	h := parseFiles(t, generate(t, f), "monitoring.tf")
	d := h.block(t, "resource", "aws_cloudwatch_dashboard", "fleet")
	if got := h.str(t, d, "dashboard_name"); got != f.Name {
		t.Errorf("dashboard_name = %q, want %q", got, f.Name)
	}
	machines := map[string]cty.Value{}
	for _, w := range f.Workflows {
		machines[local(w.Name)] = cty.ObjectVal(map[string]cty.Value{"arn": cty.StringVal(testMachineARN(w))})
	}
	vars := map[string]cty.Value{}
	if len(machines) > 0 {
		vars["aws_sfn_state_machine"] = cty.ObjectVal(machines)
	}
	ctx := &hcl.EvalContext{Variables: vars, Functions: map[string]function.Function{"jsonencode": stdlib.JSONEncodeFunc}}
	v, diags := d.Body.Attributes["dashboard_body"].Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("dashboard_body: %v", diags)
	}
	return v.AsString()
}

func testMachineARN(w *ir.Workflow) string {
	return "arn:aws:states:us-east-1:123456789012:stateMachine:" + w.StateMachineName
}

// The body Terraform will send validates against CloudWatch's documented body structure,
// and names every class's queue, DLQ and worker series, every workflow's state machine and
// every rule on the bus.
func TestDashboardMatchesFleet(t *testing.T) {
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			f := example(t, name)
			body := dashboardJSON(t, f)
			if err := verifytest.CloudWatchDashboard([]byte(body)); err != nil {
				t.Fatal(err)
			}
			lines := metricLines(t, body)
			for _, a := range f.Agents {
				want := []string{
					"AWS/SQS ApproximateNumberOfMessagesVisible QueueName " + a.Queue.Name,
					"AWS/SQS ApproximateNumberOfMessagesNotVisible QueueName " + a.Queue.Name,
					"AWS/SQS ApproximateAgeOfOldestMessage QueueName " + a.Queue.Name,
					"AWS/SQS ApproximateNumberOfMessagesVisible QueueName " + a.DLQ.Name,
				}
				if a.Lambda != nil {
					want = append(want, "AWS/Lambda Invocations FunctionName "+a.Lambda.FunctionName)
				} else {
					want = append(want, "fleetc/worker agent_step_duration_seconds class "+a.Name,
						"fleetc/worker agent_step_retries_total class "+a.Name,
						"fleetc/worker agent_steps_dead_lettered_total class "+a.Name)
				}
				for _, m := range a.Models {
					want = append(want, "fleetc/worker fleet_model_tokens_total policy "+m.Name,
						"fleetc/worker fleet_model_fallbacks_total policy "+m.Name)
				}
				if a.Rule != nil {
					want = append(want, "AWS/Events FailedInvocations EventBusName "+f.Bus.Name+" RuleName "+a.Rule.Name,
						"AWS/Events ThrottledRules EventBusName "+f.Bus.Name+" RuleName "+a.Rule.Name)
				}
				for _, w := range want {
					if !slices.Contains(lines, w) {
						t.Errorf("class %s: no dashboard line %q", a.Name, w)
					}
				}
			}
			for _, w := range f.Workflows {
				for _, m := range executionMetrics {
					if l := "AWS/States " + m.metric + " StateMachineArn " + testMachineARN(w); !slices.Contains(lines, l) {
						t.Errorf("workflow %s: no dashboard line %q", w.Name, l)
					}
				}
			}
		})
	}
}

// metricLines is every metric line of a body as "namespace name dim value ...".
func metricLines(t *testing.T, body string) []string {
	t.Helper()
	var b struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range b.Widgets {
		for _, m := range w.Properties.Metrics {
			var parts []string
			for _, p := range m {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				}
			}
			out = append(out, strings.Join(parts, " "))
		}
	}
	return out
}

// A class added to the fleet adds its widgets, below the others, on the grid.
func TestDashboardGrowsWithClasses(t *testing.T) {
	f := example(t, "minimal")
	before := onePage(t, f)
	extra := *f.Agents[0]
	extra.Name = "extra"
	extra.Queue.Name, extra.DLQ.Name = "minimal-extra", "minimal-extra-dlq"
	if extra.Lambda != nil {
		fn := *extra.Lambda
		fn.FunctionName = "minimal-extra"
		extra.Lambda = &fn
	}
	f.Agents = append(f.Agents, &extra)
	after := onePage(t, f)
	if err := after.Check(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(after)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifytest.CloudWatchDashboard(b); err != nil {
		t.Fatal(err)
	}
	perClass := 0
	for _, w := range before.Widgets {
		if p, ok := w.Properties.(*cwdashboard.MetricProperties); ok && strings.HasPrefix(p.Title, f.Agents[0].Name+":") {
			perClass++
		}
	}
	var added []string
	for _, w := range after.Widgets {
		if p, ok := w.Properties.(*cwdashboard.MetricProperties); ok && strings.HasPrefix(p.Title, "extra:") {
			added = append(added, p.Title)
			if !strings.Contains(string(mustJSON(t, p)), "minimal-extra") {
				t.Errorf("widget %q does not read the new class's queues", p.Title)
			}
		}
	}
	if perClass < 4 || len(added) != perClass {
		t.Errorf("new class got %d widgets %v, the first has %d", len(added), added, perClass)
	}
	// No two widgets overlap.
	for i, a := range after.Widgets {
		for _, b := range after.Widgets[:i] {
			if a.X < b.X+b.Width && b.X < a.X+a.Width && a.Y < b.Y+b.Height && b.Y < a.Y+a.Height {
				t.Errorf("widgets overlap: %+v and %+v", a, b)
			}
		}
	}
}

func onePage(t *testing.T, f *ir.Fleet) cwdashboard.Body {
	t.Helper()
	pages := DashboardBodies(f)
	if len(pages) != 1 {
		t.Fatalf("%d dashboard pages", len(pages))
	}
	return pages[0]
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A fleet past CloudWatch's 500 widgets gets more pages, each valid, each class on exactly one.
func TestDashboardPages(t *testing.T) {
	f := example(t, "minimal")
	base := f.Agents[0]
	f.Agents = nil
	for i := range 120 {
		a := *base
		a.Name = "c" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + strings.Repeat("0", i/26)
		a.Queue.Name, a.DLQ.Name = "q-"+a.Name, "d-"+a.Name
		f.Agents = append(f.Agents, &a)
	}
	pages := DashboardBodies(f)
	if len(pages) < 2 {
		t.Fatalf("%d pages for 120 classes", len(pages))
	}
	seen := map[string]int{}
	for _, p := range pages {
		if err := p.Check(); err != nil {
			t.Error(err)
		}
		if err := verifytest.CloudWatchDashboard(mustJSON(t, p)); err != nil {
			t.Fatal(err)
		}
		for _, w := range p.Widgets {
			if tp, ok := w.Properties.(*cwdashboard.TextProperties); ok && strings.HasPrefix(tp.Markdown, "## class ") {
				seen[tp.Markdown]++
			}
		}
	}
	if len(seen) != len(f.Agents) {
		t.Errorf("%d classes on the pages, want %d", len(seen), len(f.Agents))
	}
	for h, n := range seen {
		if n != 1 {
			t.Errorf("%s on %d pages", h, n)
		}
	}
}
