package terraform

import (
	"encoding/json"
	"fmt"

	"github.com/fleetc/fleetc/compiler/cwdashboard"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/contract"
)

// Dashboard layout: a row per class of 6x6 widgets (four to a row), then the workflows and
// the bus.
const (
	widgetWidth  = 6
	widgetHeight = 6
	// dashboardPeriod is one minute: SQS and EventBridge publish once a minute.
	dashboardPeriod = 60
)

// AWS/States execution metrics, one line per status, in the order a reader scans them.
var executionMetrics = []struct{ metric, label string }{
	{"ExecutionsStarted", "started"},
	{"ExecutionsSucceeded", "succeeded"},
	{"ExecutionsFailed", "failed"},
	{"ExecutionsTimedOut", "timed out"},
	{"ExecutionsAborted", "aborted"},
	{"ExecutionsRedriven", "redriven"},
}

// stateMachineARN is the placeholder a dashboard line carries for a workflow's state machine
// ARN (known only at apply); dashboard() turns it into the resource's arn reference.
func stateMachineARN(w *ir.Workflow) string { return "fleetc:state-machine-arn:" + w.Name }

// section is a heading and its metric widgets, kept together on one dashboard.
type section struct {
	heading string
	widgets []*cwdashboard.MetricProperties
}

// DashboardBodies is the fleet's CloudWatch dashboard: per class its queue (waiting, in
// flight, age of the oldest message), DLQ depth, steps, retries and dead letters, and per
// model policy its tokens and fallbacks; per workflow its executions by status; per rule on
// the bus its failed invocations and throttles. Worker series are read from
// contract.CloudWatchNamespace; lambda classes, which serve no /metrics, show their
// function's invocations, errors and throttles instead. A fleet too large for CloudWatch's
// 500 widgets a dashboard gets further pages, a section never split across two.
func DashboardBodies(f *ir.Fleet) []cwdashboard.Body {
	var pages []cwdashboard.Body
	var l cwdashboard.Layout
	n := 0
	flush := func() {
		if n > 0 {
			pages = append(pages, cwdashboard.Body{Start: "-PT3H", PeriodOverride: "auto", Widgets: l.Widgets()})
		}
		l, n = cwdashboard.Layout{}, 0
	}
	for _, s := range dashboardSections(f) {
		if n+1+len(s.widgets) > cwdashboard.MaxWidgets {
			flush()
		}
		l.Break()
		l.Add(cwdashboard.TypeText, cwdashboard.GridWidth, 1, &cwdashboard.TextProperties{Markdown: s.heading, Background: "transparent"})
		l.Break()
		for _, p := range s.widgets {
			l.Add(cwdashboard.TypeMetric, widgetWidth, widgetHeight, p)
		}
		n += 1 + len(s.widgets)
	}
	flush()
	return pages
}

func dashboardSections(f *ir.Fleet) []section {
	graph := func(title, stat string, lines ...cwdashboard.Metric) *cwdashboard.MetricProperties {
		return &cwdashboard.MetricProperties{Title: title, View: cwdashboard.ViewTimeSeries, Region: f.Region,
			Stat: stat, Period: dashboardPeriod, Metrics: lines}
	}
	line := func(ns, name, label string, dims ...cwdashboard.Dim) cwdashboard.Metric {
		return cwdashboard.Metric{Namespace: ns, Name: name, Dims: dims, Render: &cwdashboard.Render{Label: label}}
	}
	queue := func(name string) cwdashboard.Dim { return cwdashboard.Dim{Name: "QueueName", Value: name} }
	class := func(a *ir.Agent) cwdashboard.Dim { return cwdashboard.Dim{Name: contract.LabelClass, Value: a.Name} }

	var out []section
	for _, a := range f.Agents {
		s := section{heading: fmt.Sprintf("## class %s (%s)", a.Name, a.Runtime)}
		add := func(p *cwdashboard.MetricProperties) { s.widgets = append(s.widgets, p) }
		q := queue(a.Queue.Name)
		add(graph(a.Name+": queue", "Maximum",
			line("AWS/SQS", "ApproximateNumberOfMessagesVisible", "waiting", q),
			line("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "in flight", q)))
		add(graph(a.Name+": age of oldest message (s)", "Maximum",
			line("AWS/SQS", "ApproximateAgeOfOldestMessage", "oldest", q)))
		add(graph(a.Name+": DLQ depth", "Maximum",
			line("AWS/SQS", "ApproximateNumberOfMessagesVisible", "dead letters", queue(a.DLQ.Name))))
		if a.Lambda != nil {
			fn := cwdashboard.Dim{Name: "FunctionName", Value: a.Lambda.FunctionName}
			add(graph(a.Name+": invocations", "Sum",
				line("AWS/Lambda", "Invocations", "invocations", fn),
				line("AWS/Lambda", "Errors", "errors", fn),
				line("AWS/Lambda", "Throttles", "throttles", fn)))
		} else {
			steps := line(contract.CloudWatchNamespace, contract.MetricStepDuration, "steps", class(a))
			steps.Render.Stat = "SampleCount"
			add(graph(a.Name+": steps, retries, dead letters", "Sum", steps,
				line(contract.CloudWatchNamespace, contract.MetricStepRetries, "retries", class(a)),
				line(contract.CloudWatchNamespace, contract.MetricStepsDeadLettered, "dead-lettered", class(a))))
		}
		if len(a.Models) > 0 {
			var tokens, fallbacks []cwdashboard.Metric
			for _, m := range a.Models {
				p := cwdashboard.Dim{Name: contract.LabelPolicy, Value: m.Name}
				tokens = append(tokens, line(contract.CloudWatchNamespace, contract.MetricModelTokens, m.Name, p))
				fallbacks = append(fallbacks, line(contract.CloudWatchNamespace, contract.MetricModelFallbacks, m.Name, p))
			}
			add(graph(a.Name+": model tokens by policy", "Sum", tokens...))
			add(graph(a.Name+": model fallbacks by policy", "Sum", fallbacks...))
		}
		out = append(out, s)
	}

	if len(f.Workflows) > 0 {
		s := section{heading: "## workflows"}
		for _, w := range f.Workflows {
			arn := cwdashboard.Dim{Name: "StateMachineArn", Value: stateMachineARN(w)}
			var lines []cwdashboard.Metric
			for _, m := range executionMetrics {
				lines = append(lines, line("AWS/States", m.metric, m.label, arn))
			}
			s.widgets = append(s.widgets, graph(w.Name+": executions by status", "Sum", lines...))
		}
		out = append(out, s)
	}

	var failed, throttled []cwdashboard.Metric
	for _, a := range f.Agents {
		if a.Rule == nil {
			continue
		}
		dims := []cwdashboard.Dim{{Name: "EventBusName", Value: f.Bus.Name}, {Name: "RuleName", Value: a.Rule.Name}}
		failed = append(failed, line("AWS/Events", "FailedInvocations", a.Name, dims...))
		throttled = append(throttled, line("AWS/Events", "ThrottledRules", a.Name, dims...))
	}
	if len(failed) > 0 {
		out = append(out, section{heading: "## bus " + f.Bus.Name, widgets: []*cwdashboard.MetricProperties{
			graph("bus: failed invocations by rule", "Sum", failed...),
			graph("bus: throttled rules", "Sum", throttled...),
		}})
	}
	return out
}

// monitoring writes monitoring.tf: the alarms' topic when fleetc creates it, and the
// dashboard.
func (g *gen) monitoring() {
	fl := g.file("monitoring.tf").owner(PartMonitoring, "")
	if t := g.f.Alarms.Notify; t != nil && t.Create {
		g.claim("aws_sns_topic", "alarms", t.Path)
		r := fl.resource("aws_sns_topic", "alarms",
			"alarms.notify: create. Every alarm notifies it on ALARM and OK; subscribe the on-call channel after apply.")
		r.set("name", str(t.Name))
	}
	for i, body := range DashboardBodies(g.f) {
		g.dashboard(fl, i, body)
	}
}

// dashboard emits one aws_cloudwatch_dashboard (page i of the fleet's), its body as
// jsonencode of the typed model with the state machine ARNs as references.
func (g *gen) dashboard(fl *file, i int, body cwdashboard.Body) {
	if err := body.Check(); err != nil {
		g.ds.Errorf("TF000", "", "internal error: dashboard: %v", err)
		return
	}
	b, err := json.Marshal(body)
	var doc any
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	refs := map[string]tokens{}
	for _, w := range g.f.Workflows {
		refs[stateMachineARN(w)] = ref("aws_sfn_state_machine", local(w.Name), "arn")
	}
	var t tokens
	if err == nil {
		t, err = valueWith(doc, refs)
	}
	if err != nil {
		g.ds.Errorf("TF000", "", "internal error: dashboard: %v", err)
		return
	}
	name, addr := g.f.Name, "fleet"
	if i > 0 { // pages past CloudWatch's 500 widgets
		name, addr = fmt.Sprintf("%s-%d", name, i+1), fmt.Sprintf("fleet_%d", i+1)
	}
	g.claim("aws_cloudwatch_dashboard", addr, "")
	d := fl.resource("aws_cloudwatch_dashboard", addr,
		"Per class queue, DLQ and worker series, per workflow executions, the bus's failures.",
		"Worker series (namespace "+contract.CloudWatchNamespace+") appear once a collector exports /metrics as EMF (docs/operating.md).")
	d.set("dashboard_name", str(name))
	d.set("dashboard_body", call("jsonencode", t))
}
