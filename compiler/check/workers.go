package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

var workerRules = []Rule{
	{
		ID: "W001", Category: "workers", Severity: diag.Error,
		Summary: "lambda classes: step.max ≤ 15 min",
		Explain: `Lambda functions hard-stop at 15 minutes (900 s): a step that can run longer is killed
mid-work, its message reappears after the visibility timeout, and it is killed again.
Steps that can exceed 15 minutes (deep research, browser-driven tools, long refactors)
belong on their own queue with a pod worker (eks, scaled by KEDA) or an AgentCore
session; the pattern does not change, only the runtime.
Fix: set runtime: eks or agentcore, or bound step.max to 15m.`,
		Check: checkLambdaMax,
	},
	{
		ID: "W002", Category: "workers", Severity: diag.Warning,
		Summary: "lambda batching window > 0 coalesces slow agent steps",
		Explain: `The SQS event source mapping can buffer up to 5 minutes (MaximumBatchingWindowInSeconds,
0–300) before invoking. Agent steps are too slow and too expensive to coalesce, and a
bigger window mostly raises the chance that a batch holds one poison message beside nine
good ones. fleetc always sets FunctionResponseTypes ReportBatchItemFailures, so only the
failed records are retried. A window above 300 s is refused (error); above 0 warns.
Fix: set lambda.batching_window: 0s.`,
		Check: checkBatchingWindow,
	},
	{
		ID: "W003", Category: "workers", Severity: diag.Error,
		Summary: "lambda: visibility ≥ 6 × function timeout, function timeout ≥ step.max",
		Explain: `Lambda refuses an SQS event source whose queue visibility is below the function timeout,
and AWS's guidance for SQS event sources is visibility ≥ 6 × the function timeout, so a
throttled or retried batch is not redelivered while still being processed. fleetc sets
the function timeout to step.max (rounded up to a second) and the default visibility to
6 × that.
Formula: visibility ≥ 6 × ceil(step.max); function timeout ≥ step.max.
Fix: raise queue.visibility (≤ 12 h), or leave it to fleetc's default.`,
		Check: checkLambdaVisibility,
	},
	{
		ID: "W004", Category: "workers", Severity: diag.Error,
		Summary: "agentcore: session ≤ 8 h (14 d instances), active sessions ≤ 5,000 / 2,500, payload ≤ 100 MB",
		Explain: `AgentCore sessions run up to 8 hours per lifecycle on microVMs (14 days on Instances); a
step longer than the session cannot finish in it. An account holds 5,000 active session
workloads in us-east-1, us-west-2 and eu-west-1 (2,500 elsewhere), and an invocation
payload is at most 100 MB.
Formula: active sessions = traffic.concurrent_conversations when declared (the session
carries the conversation), else Σ in-flight steps of agentcore classes.
Fix: shorten agentcore.session or set instances: true; claim-check large payloads;
request a session quota increase.`,
		Check: checkAgentCore,
	},
	{
		ID: "W005", Category: "workers", Severity: diag.Error,
		Summary: "KEDA: scaling.max × per_replica ≤ the model policy's max_in_flight",
		Explain: `A worker pool that scales pods past its model quota converts queue pressure into
throttling errors: 200 runs pulled at once become a wall of 429s, each costing a retry.
Size concurrency to the token budget, not the CPU, and let the queue absorb the burst.
Formula: Σ over eks classes sharing a policy of scaling.max × scaling.per_replica ≤ the
policy's max_in_flight (uncapped policies are M004's concern).
Fix: lower scaling.max or per_replica, or raise max_in_flight if the provider quota allows.`,
		Check: checkKEDAvsModel,
	},
	{
		ID: "W006", Category: "workers", Severity: diag.Error,
		Summary: "KEDA: cooldown ≥ step p95; scale_on_in_flight stays on for long steps",
		Explain: `KEDA scales eks workers on queue depth. A cooldown shorter than a step lets KEDA remove
pods that still hold in-flight messages (kedacore/keda#1663, #5948): the step is cut off
and re-runs after visibility expires. By default the scaler counts in-flight messages
(ApproximateNumberOfMessagesNotVisible); turning that off for steps longer than the
30 s polling interval makes a saturated pool look idle.
Formula: scaling.cooldown ≥ step.p95; scale_on_in_flight: true when step.p95 > 30 s.
Fix: raise scaling.cooldown (default 300s), remove scale_on_in_flight: false.`,
		Check: checkKEDAScaleDown,
	},
}

func checkLambdaMax(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Runtime == "lambda" && a.StepMax > ir.LambdaMaxTimeout {
			r.Add(a.Path+"/step/max",
				fmt.Sprintf("lambda class %s: step.max %s is above Lambda's 15-minute hard stop", a.Name, dur(a.StepMax)),
				"Use runtime: eks or agentcore for steps that can run longer than 15m.")
		}
	}
}

func checkBatchingWindow(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Runtime != "lambda" || a.Lambda == nil {
			continue
		}
		w := a.Lambda.BatchingWindow
		path := a.Path + "/lambda/batching_window"
		switch {
		case w > 300*time.Second:
			r.Add(path, fmt.Sprintf("lambda class %s: batching_window %s is above the 300 s maximum", a.Name, dur(w)),
				"Set lambda.batching_window: 0s.")
		case w > 0:
			r.Warn(path, fmt.Sprintf("lambda class %s: batching_window %s coalesces slow agent steps", a.Name, dur(w)),
				"Set lambda.batching_window: 0s; agent steps are too slow and costly to batch.")
		}
	}
}

func checkLambdaVisibility(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Runtime != "lambda" || a.Lambda == nil {
			continue
		}
		t := a.Lambda.Timeout
		if a.StepMax <= ir.LambdaMaxTimeout && t < a.StepMax {
			r.Add(a.Path+"/step/max",
				fmt.Sprintf("lambda class %s: function timeout %s is below step.max %s", a.Name, dur(t), dur(a.StepMax)),
				"The function timeout must cover the step; this is set by fleetc, please report it.")
		}
		if v := a.Queue.Visibility; v < 6*t {
			what := "below AWS's 6 × function timeout guidance"
			if v < t {
				what = "below the function timeout, which Lambda refuses"
			}
			r.Add(queueField(f, a, "visibility"),
				fmt.Sprintf("lambda class %s: visibility %s is %s (%s × 6 = %s)", a.Name, dur(v), what, dur(t), dur(6*t)),
				fmt.Sprintf("Set queue.visibility to at least %s, or omit it for fleetc's default.", dur(6*t)))
		}
	}
}

func checkAgentCore(f *ir.Fleet, r *Reporter) {
	var sessions float64
	var classes []string
	for _, a := range f.Agents {
		if a.Runtime != "agentcore" || a.AgentCore == nil {
			continue
		}
		classes = append(classes, a.Name)
		sessions += inFlight(f, a)
		ac := a.AgentCore
		limit, kind := 8*time.Hour, "microVM"
		if ac.Instances {
			limit, kind = 14*24*time.Hour, "Instances"
		}
		spath := at(f, a.Path+"/agentcore/session", a.Path+"/agentcore")
		if ac.Session > limit {
			r.Add(spath,
				fmt.Sprintf("agentcore class %s: session %s exceeds the %s lifecycle of %s", a.Name, dur(ac.Session), dur(limit), kind),
				"Shorten agentcore.session, or set agentcore.instances: true for up to 14d.")
		} else if a.StepMax > ac.Session {
			r.Add(a.Path+"/step/max",
				fmt.Sprintf("agentcore class %s: step.max %s outlives its %s session", a.Name, dur(a.StepMax), dur(ac.Session)),
				"Lengthen agentcore.session (≤ 8h microVM, 14d instances) or split the step.")
		}
		if n := inline(a); n > agentCorePayload {
			r.Add(at(f, a.Path+"/payload/claim_check_over", a.Path+"/payload"),
				fmt.Sprintf("agentcore class %s: payloads up to %s exceed AgentCore's 100 MB invocation limit", a.Name, bytesOf(n)),
				"Set payload.claim_check_over below 100MB.")
		}
	}
	if len(classes) == 0 || f.Traffic == nil {
		return
	}
	path := at(f, "/traffic/conversations_per_minute", "/traffic")
	if f.Traffic.ConcurrentConversations > 0 {
		sessions = float64(f.Traffic.ConcurrentConversations)
		path = "/traffic/concurrent_conversations"
	}
	if q := agentCoreSessions(f.Region); sessions > float64(q) {
		r.Add(path,
			fmt.Sprintf("projected %s active AgentCore sessions (%s) exceed %s per account in %s", num(sessions), strings.Join(classes, ", "), inum(q), f.Region),
			"Request a session quota increase, or move some classes to eks.")
	}
}

func checkKEDAvsModel(f *ir.Fleet, r *Reporter) {
	byModel := map[*ir.Model][]*ir.Agent{}
	var models []*ir.Model
	for _, a := range f.Agents {
		if a.Runtime != "eks" || a.Model == nil || a.Model.MaxInFlight <= 0 {
			continue
		}
		if _, ok := byModel[a.Model]; !ok {
			models = append(models, a.Model)
		}
		byModel[a.Model] = append(byModel[a.Model], a)
	}
	sort.Slice(models, func(i, j int) bool { return models[i].Name < models[j].Name })
	for _, m := range models {
		total := 0
		var parts []string
		over := false
		for _, a := range byModel[m] {
			n := a.Scaling.Max * a.Scaling.PerReplica
			total += n
			parts = append(parts, fmt.Sprintf("%s %d × %d", a.Name, a.Scaling.Max, a.Scaling.PerReplica))
			if n > m.MaxInFlight {
				over = true
				r.Add(at(f, a.Path+"/scaling/max", a.Path+"/scaling"),
					fmt.Sprintf("class %s scales to %s concurrent model calls (%d × %d), above policy %s's max_in_flight %s",
						a.Name, inum(n), a.Scaling.Max, a.Scaling.PerReplica, m.Name, inum(m.MaxInFlight)),
					fmt.Sprintf("Lower scaling.max to %d or less, or per_replica.", m.MaxInFlight/max(a.Scaling.PerReplica, 1)))
			}
		}
		if !over && total > m.MaxInFlight {
			r.Add(at(f, m.Path+"/max_in_flight", m.Path),
				fmt.Sprintf("classes on policy %s scale to %s concurrent calls (%s), above its max_in_flight %s",
					m.Name, inum(total), strings.Join(parts, " + "), inum(m.MaxInFlight)),
				"Lower the classes' scaling.max so their sum fits the policy's cap.")
		}
	}
}

func checkKEDAScaleDown(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Runtime != "eks" {
			continue
		}
		if a.Scaling.Cooldown < a.StepP95 {
			r.Add(at(f, a.Path+"/scaling/cooldown", a.Path+"/scaling"),
				fmt.Sprintf("class %s: KEDA cooldown %s is shorter than step.p95 %s; scale-down strands in-flight steps", a.Name, dur(a.Scaling.Cooldown), dur(a.StepP95)),
				fmt.Sprintf("Set scaling.cooldown to at least %s.", dur(a.StepP95)))
		}
		if !a.Scaling.ScaleOnInFlight && a.StepP95 > kedaPollInterval {
			r.Add(at(f, a.Path+"/scaling/scale_on_in_flight", a.Path+"/scaling"),
				fmt.Sprintf("class %s: scale_on_in_flight is off with %s steps; a saturated pool looks idle to KEDA", a.Name, dur(a.StepP95)),
				"Remove scale_on_in_flight: false (count in-flight messages).")
		}
	}
}
