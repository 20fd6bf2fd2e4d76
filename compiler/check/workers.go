package check

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/contract"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
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
		ID: "W002", Category: "workers", Severity: diag.Error,
		Summary: "lambda event source mapping: batch size, batching window and maximum concurrency AWS accepts",
		Explain: `The SQS event source mapping buffers up to 300 s (MaximumBatchingWindowInSeconds) before
invoking. Agent steps are too slow and costly to coalesce, and a bigger window mostly adds
a poison message beside nine good ones, so any window > 0 warns. AWS refuses: a window
above 300 s; BatchSize above 10 with a window below 1 s; on FIFO queues a BatchSize above
10 or any batching window; ScalingConfig MaximumConcurrency (fleetc: scaling.max) below 2.
fleetc always sets ReportBatchItemFailures, so only failed records are retried.
Formula: window ≤ 300 s; batch_size > 10 ⇒ window ≥ 1 s; FIFO ⇒ batch_size ≤ 10 and
window 0; scaling.max ≥ 2 (above 1,000 needs a quota increase: warns).
Fix: lambda.batching_window: 0s with batch_size ≤ 10, and scaling.max ≥ 2.`,
		Check: checkBatchingWindow,
	},
	{
		ID: "W003", Category: "workers", Severity: diag.Error,
		Summary: "lambda: function timeout covers a batch, visibility ≥ 6 × timeout + batching window",
		Explain: `fleet-worker runs a batch's records concurrently in lambda mode, but records of one FIFO
group run in order: a FIFO batch can take batch_size × step.max, a standard one step.max.
fleetc sets the function timeout to step.max (rounded up). Lambda refuses a visibility
below the timeout; AWS's guidance is visibility ≥ 6 × the function timeout (throttled
batches are retried), and records wait in the poller for the batching window before the
invocation starts, so the window adds to it.
Formula: timeout ≥ step.max (standard) or batch_size × step.max (FIFO); visibility ≥
6 × timeout + batching_window.
Fix: lambda.batch_size: 1 on FIFO classes; raise queue.visibility (≤ 12 h) or leave it to
fleetc's default.`,
		Check: checkLambdaVisibility,
	},
	{
		ID: "W004", Category: "workers", Severity: diag.Error,
		Summary: "agentcore: step ≤ 15 min sync request, session ≤ 8 h (14 d), sessions ≤ 5,000 / 2,500, payload ≤ 100 MB",
		Explain: `AgentCore sessions run up to 8 hours on microVMs (14 days on Instances); an InvokeAgentRuntime
request is synchronous with a 15-minute timeout, so a step must finish in 15 minutes. An
account holds 5,000 active sessions in us-east-1 and us-west-2 (2,500 elsewhere; the
seed says big-3, the quotas page names these two); an invocation payload is at most 100 MB.
Formula: step.max ≤ 15m and ≤ session; active sessions = traffic.concurrent_conversations
when declared, else Σ in-flight steps of agentcore classes.
fleetc feeds the runtime with a generated dispatcher (fleet-worker --mode dispatch, a Lambda
on the class queue) that calls InvokeAgentRuntime in the conversation's session.
Fix: split steps over 15m or use eks; shorten agentcore.session or set instances: true;
claim-check large payloads; request a session quota increase.`,
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
		Summary: "KEDA: scaling.min ≤ max, cooldown ≥ step p95, scale_on_in_flight stays on for long steps",
		Explain: `KEDA scales eks workers on queue depth, and refuses a ScaledObject whose minReplicaCount
exceeds maxReplicaCount. A cooldown shorter than a step lets KEDA remove pods that still
hold in-flight messages (kedacore/keda#1663, #5948): the step is cut off and re-runs
after visibility expires. The scaler counts in-flight messages by default; turning that
off for steps longer than the 30 s polling interval makes a saturated pool look idle.
Formula: scaling.min ≤ scaling.max; scaling.cooldown ≥ step.p95; scale_on_in_flight:
true when step.p95 > 30 s.
Fix: keep scaling.min ≤ max, raise scaling.cooldown (default 300s), remove
scale_on_in_flight: false.`,
		Check: checkKEDAScaleDown,
	},
	{
		ID: "W007", Category: "workers", Severity: diag.Warning,
		Summary: "exec handler in the stock fleet-worker image",
		Explain: `An exec handler runs a command inside the worker's container. The stock image
(` + ir.DefaultImage + `, used when neither worker.image nor the class's
image is set) holds only fleet-worker: the command does not exist there, and every step
fails with the exec error until the image is replaced.
Build an image FROM the stock one that adds your handler, and point fleetc at it.
Fix: set worker.image (or the class's image) to your image, or use an http or llm handler.`,
		Check: checkExecImage,
	},
	{
		ID: "W008", Category: "workers", Severity: diag.Error,
		Summary: "eks classes: worker.eks names the cluster and the KEDA operator's role",
		Explain: `EKS Pod Identity gives an eks class's pods its worker role only through an association
of cluster, namespace and service account (<class>-worker), and KEDA reads queue depth with
an AWS identity too. fleetc creates an aws_eks_pod_identity_association per eks class on
worker.eks.cluster, and a role <fleet>-keda-scaler (sqs:GetQueueAttributes on the eks queues)
trusted by worker.eks.keda_operator_role and named by every TriggerAuthentication (roleArn),
so fleets share a cluster's operator without editing its role. Without a cluster the pods
would start with no credentials. The operator role's account must be the fleet's (terraform
plan refuses another), in the partition of the fleet's region. Find the operator's role with
aws eks list-pod-identity-associations --cluster-name C --namespace keda (or IRSA's annotation).
Fix: worker: { eks: { cluster: <name>, keda_operator_role: arn:aws:iam::<account>:role/<name> } }.`,
		Check: checkEKSWorker,
	},
	{
		ID: "W009", Category: "workers", Severity: diag.Error,
		Summary: "handler.secrets name variables the worker leaves to the command",
		Explain: `handler.secrets gives an exec command variables whose values live in Secrets Manager or
SSM: fleet-worker reads each at start (a restart reads it again) with the class's role,
which may read exactly those secrets and parameters, and puts it in the command's
environment only; Terraform, the runtime config, logs and spans hold the reference.
A name the worker sets itself (PATH, HOME, LANG, TZ, the model gateway's variables,
TRACEPARENT, FLEET_*) or keeps from the command (AWS_*, the worker's credentials) would be
overwritten or would leak what it protects, and a name also in inherit_env has two sources.
Fix: rename the variable (e.g. VENDOR_API_KEY), or drop it from inherit_env.`,
		Check: checkHandlerSecrets,
	},
	{
		ID: "W010", Category: "workers", Severity: diag.Error,
		Summary: "agentcore: an http handler does not listen on fleet-worker's own port",
		Explain: `In an agentcore class's container fleet-worker itself serves AgentCore's runtime contract
(/invocations and /ping) on port ` + rc.AgentCorePort + `, on every interface. An http handler
(the sidecar fleet-worker POSTs each step to) at localhost, 127.0.0.1, [::1] or 0.0.0.0 on
that port is fleet-worker: every step would call the worker itself instead of the handler,
and never reach the class's code.
Fix: run the sidecar on another port, e.g. http: "http://127.0.0.1:8081/step".`,
		Check: checkAgentCoreHandlerPort,
	},
}

// checkHandlerSecrets enforces W009.
func checkHandlerSecrets(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		for _, name := range slices.Sorted(maps.Keys(a.Handler.Secrets)) {
			path := at(f, a.Path+"/handler/secrets/"+name, a.Path+"/handler")
			switch {
			case contract.ReservedExecEnv(name):
				r.Add(path, fmt.Sprintf("class %s: handler secret %s names a variable fleet-worker sets or withholds itself", a.Name, name),
					"Rename the variable the command reads (e.g. VENDOR_API_KEY); PATH, HOME, LANG, TZ, TRACEPARENT, FLEET_*, AWS_* and the model gateway's are the worker's.")
			case slices.Contains(a.Handler.InheritEnv, name):
				r.Add(path, fmt.Sprintf("class %s: %s is both a handler secret and in inherit_env", a.Name, name),
					"Drop it from inherit_env: the secret is its source in a deployed worker, and fleetc dev takes a variable of that name from your shell anyway.")
			}
		}
	}
}

// checkAgentCoreHandlerPort enforces W010.
func checkAgentCoreHandlerPort(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Runtime != rc.RuntimeAgentCore || a.Handler.Kind != rc.HandlerHTTP {
			continue
		}
		if u, err := url.Parse(a.Handler.URL); err == nil && localHost(u.Hostname()) && urlPort(u) == rc.AgentCorePort {
			r.Add(a.Path+"/handler/http",
				fmt.Sprintf("agentcore class %s: http handler %s is fleet-worker's own listener (port %s in the container): every step would call the worker itself", a.Name, a.Handler.URL, rc.AgentCorePort),
				"Run the handler's sidecar on another port than "+rc.AgentCorePort+" and point handler.http at it.")
		}
	}
}

// localHost reports whether host names this container: a loopback name or address, or the
// unspecified address (a listener on every interface answers there too).
func localHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// urlPort is u's port, or its scheme's default.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
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
		w, n := a.Lambda.BatchingWindow, a.Lambda.BatchSize
		wpath := at(f, a.Path+"/lambda/batching_window", a.Path+"/lambda", a.Path)
		bpath := at(f, a.Path+"/lambda/batch_size", a.Path+"/lambda", a.Path)
		switch {
		case w > maxBatchingWindow:
			r.Add(wpath, fmt.Sprintf("lambda class %s: batching_window %s is above the 300 s maximum", a.Name, dur(w)),
				"Set lambda.batching_window: 0s.")
		case a.FIFO && w > 0:
			r.Add(wpath, fmt.Sprintf("lambda class %s: batching_window %s on FIFO queue %s; AWS supports no batching window on FIFO queues", a.Name, dur(w), a.Queue.Name),
				"Set lambda.batching_window: 0s.")
		case w > 0:
			r.Warn(wpath, fmt.Sprintf("lambda class %s: batching_window %s coalesces slow agent steps", a.Name, dur(w)),
				"Set lambda.batching_window: 0s; agent steps are too slow and costly to batch.")
		}
		switch {
		case a.FIFO && n > maxUnwindowedBatch:
			r.Add(bpath, fmt.Sprintf("lambda class %s: batch_size %d on FIFO queue %s; FIFO event source mappings take 1–10", a.Name, n, a.Queue.Name),
				"Set lambda.batch_size to 10 or less (1 keeps the function timeout equal to step.max, see W003).")
		case !a.FIFO && n > maxUnwindowedBatch && w < minBatchWindowAbove:
			r.Add(bpath, fmt.Sprintf("lambda class %s: batch_size %d with batching_window %s; AWS requires a window of at least 1 s above 10 records", a.Name, n, dur(w)),
				"Set lambda.batch_size to 10 or less (agent steps gain nothing from batching), or batching_window to at least 1s.")
		}
		spath := at(f, a.Path+"/scaling/max", a.Scaling.Path, a.Path)
		switch m := a.Scaling.Max; {
		case m < minESMConcurrency:
			r.Add(spath, fmt.Sprintf("lambda class %s: scaling.max %d is below the event source mapping's minimum maximum concurrency of 2", a.Name, m),
				"Set scaling.max to 2 or more (it becomes ScalingConfig MaximumConcurrency, 2–1,000).")
		case m > maxESMConcurrency:
			r.Warn(spath, fmt.Sprintf("lambda class %s: scaling.max %s is above the event source mapping's 1,000 maximum concurrency", a.Name, inum(m)),
				"Request a quota increase before deploying, or set scaling.max to 1,000 or less.")
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
		// Records of one FIFO group run in order inside a batch (fleet-worker keeps group order).
		if n := a.Lambda.BatchSize; a.FIFO && n > 1 && n <= maxUnwindowedBatch { // above: W002
			if need := time.Duration(n) * a.StepMax; t < need {
				r.Add(at(f, a.Path+"/lambda/batch_size", a.Path+"/lambda", a.Path),
					fmt.Sprintf("lambda class %s: a FIFO batch of %d records of one group runs in order, up to %d × step.max = %s, beyond the %s function timeout",
						a.Name, n, n, dur(need), dur(t)),
					"Records left when the function stops are retried and move toward the DLQ. Set lambda.batch_size: 1 on FIFO classes.")
			}
		}
		need := lambdaVisibility*t + a.Lambda.BatchingWindow
		if v := a.Queue.Visibility; v < need {
			what := "below AWS's 6 × function timeout guidance"
			if v < t {
				what = "below the function timeout, which Lambda refuses"
			}
			formula := fmt.Sprintf("%s × 6 = %s", dur(t), dur(6*t))
			if a.Lambda.BatchingWindow > 0 {
				formula = fmt.Sprintf("%s × 6 + %s batching window = %s", dur(t), dur(a.Lambda.BatchingWindow), dur(need))
			}
			path := queueField(f, a, "visibility")
			detail := fmt.Sprintf("Set queue.visibility to at least %s, or omit it for fleetc's default.", dur(need))
			if f.Index == nil || !f.Index.Has(path) {
				detail = fmt.Sprintf("fleetc's default visibility (6 × the function timeout) leaves no room for the batching window: set queue.visibility to at least %s, or lambda.batching_window: 0s.", dur(need))
			}
			r.Add(path, fmt.Sprintf("lambda class %s: visibility %s is %s (%s)", a.Name, dur(v), what, formula), detail)
		}
	}
}

func checkAgentCore(f *ir.Fleet, r *Reporter) {
	var classes []string
	for _, a := range f.Agents {
		if a.Runtime != "agentcore" || a.AgentCore == nil {
			continue
		}
		classes = append(classes, a.Name)
		ac := a.AgentCore
		limit, kind := agentCoreMicroVM, "microVM"
		if ac.Instances {
			limit, kind = agentCoreInstances, "Instances"
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
		if a.StepMax > agentCoreSyncRequest {
			r.Add(a.Path+"/step/max",
				fmt.Sprintf("agentcore class %s: step.max %s is above InvokeAgentRuntime's 15-minute synchronous request timeout", a.Name, dur(a.StepMax)),
				"Split the step into parts under 15m (the session keeps context between them), or run the class on eks.")
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
	sessions, fromConversations := capacity.Of(f).AgentCoreSessions()
	path := at(f, "/traffic/conversations_per_minute", "/traffic")
	if fromConversations {
		path = "/traffic/concurrent_conversations"
	}
	if q := capacity.AgentCoreSessions(f.Region); sessions > float64(q) {
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
		if a.Scaling.Min > a.Scaling.Max {
			r.Add(at(f, a.Path+"/scaling/min", a.Path+"/scaling"),
				fmt.Sprintf("class %s: scaling.min %d exceeds scaling.max %d; KEDA refuses the ScaledObject", a.Name, a.Scaling.Min, a.Scaling.Max),
				fmt.Sprintf("Set scaling.min to %d or less, or raise scaling.max.", a.Scaling.Max))
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

func checkExecImage(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Handler.Kind != "exec" || a.Image != ir.DefaultImage {
			continue
		}
		cmd := ""
		if len(a.Handler.Command) > 0 {
			cmd = a.Handler.Command[0]
		}
		r.Warn(at(f, a.Path+"/handler/exec", a.Path+"/handler", a.Path),
			fmt.Sprintf("class %s: exec handler %q runs in the stock image %s, which does not contain it", a.Name, cmd, ir.DefaultImage),
			"Build an image FROM the stock fleet-worker image with your handler and set worker.image (or the class's image), or use an http or llm handler.")
	}
}

func checkEKSWorker(f *ir.Fleet, r *Reporter) {
	var classes []string
	var first *ir.Agent
	for _, a := range f.Agents {
		if a.K8s != nil {
			if first == nil {
				first = a
			}
			classes = append(classes, a.Name)
		}
	}
	if first == nil {
		return
	}
	e := f.Worker.EKS
	if e == nil {
		r.Add(at(f, first.Path+"/runtime", first.Path),
			fmt.Sprintf("eks classes (%s) need worker.eks: the cluster their pods run on and the KEDA operator's role", strings.Join(classes, ", ")),
			"Add worker: { eks: { cluster: <cluster name>, keda_operator_role: <ARN of the KEDA operator's IAM role> } }; fleetc then associates each <class>-worker service account with its role (EKS Pod Identity) and lets the operator read the queues' depth. fleetc explain W008 says how to find the operator's role.")
		return
	}
	if want := ir.Partition(f.Region); e.Partition != want {
		r.Add(at(f, e.Path+"/keda_operator_role", e.Path),
			fmt.Sprintf("worker.eks.keda_operator_role is in partition %s, region %s is in %s", e.Partition, f.Region, want),
			"The KEDA scaler role is created in the fleet's account and partition; name the operator role of the cluster in region "+f.Region+".")
	}
}
