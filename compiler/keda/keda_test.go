package keda

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"

	"sigs.k8s.io/yaml"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/internal/verifytest"
)

var lower = irtest.Load

var lowerSrc = irtest.LoadSource

// A standard-queue eks class that may scale to zero, in a non-default namespace.
const zeroFleet = `version: 1
fleet: zero
region: ap-southeast-2
bus: { name: zb }
worker: { namespace: batch, image: "registry.example.com/fw:1", eks: { cluster: batch, keda_operator_role: "arn:aws:iam::111122223333:role/keda-operator" } }
events:
  e: { version: 1, source: s, detail: { type: object } }
agents:
  crawler:
    runtime: eks
    consumes: { event: e }
    step: { p95: 30s, max: 90m }
    handler: { exec: ["/bin/crawl", "--fast"] }
    image: registry.example.com/crawler:2
    scaling: { min: 0, max: 5, per_replica: 3, cooldown: 2h, activation: 2, scale_on_in_flight: false }
`

type fleetCase struct {
	name string
	f    *ir.Fleet
}

func cases(t *testing.T) []fleetCase {
	t.Helper()
	paths, err := filepath.Glob("../../examples/*/fleet.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	var out []fleetCase
	for _, p := range paths {
		out = append(out, fleetCase{filepath.Base(filepath.Dir(p)), lower(t, p)})
	}
	return append(out, fleetCase{"zero (inline)", lowerSrc(t, zeroFleet)})
}

// configs renders every class's runtime config, as the compiler driver does before it runs
// the backends.
func configs(t *testing.T, f *ir.Fleet) map[string][]byte {
	t.Helper()
	c, ds := runtimeconfig.RenderAll(f)
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	return c
}

func generate(t *testing.T, f *ir.Fleet) *artifact.Set {
	t.Helper()
	files, ds := Generate(f, configs(t, f))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	set, err := artifact.NewSet(files...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestKubeconform writes every example's manifests to disk and runs kubeconform -strict on
// them against the offline Kubernetes and KEDA schemas.
func TestKubeconform(t *testing.T) {
	checked := 0
	for _, c := range cases(t) {
		set := generate(t, c.f)
		eks := 0
		for _, a := range c.f.Agents {
			if a.Runtime == "eks" {
				eks++
			}
		}
		if got := len(set.Paths()); got != 5*eks {
			t.Fatalf("%s: %d files for %d eks classes: %v", c.name, got, eks, set.Paths())
		}
		if eks == 0 {
			continue
		}
		dir := t.TempDir()
		var paths []string
		for _, file := range set.Files() {
			dst := filepath.Join(dir, filepath.FromSlash(file.Path))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, file.Bytes, 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, dst)
		}
		err := verifytest.Kubeconform(paths...)
		if errors.Is(err, verifytest.ErrToolMissing) {
			t.Skipf("SKIPPING kubeconform: %v", err)
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		checked += len(paths)
	}
	if checked < 15 {
		t.Errorf("kubeconform checked %d manifests; want research-fleet's 10 and the inline fleet's 5", checked)
	}
}

// TestKubeconformCatchesMistakes proves the check has teeth on our own output.
func TestKubeconformCatchesMistakes(t *testing.T) {
	f := lower(t, "../../examples/research-fleet/fleet.yaml")
	so := ScaledObjectFor(f, f.Agent("researcher"))
	b, err := yaml.Marshal(so)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b, []byte("pollingInterval:"), []byte("pollInterval:"), 1)
	p := filepath.Join(t.TempDir(), "scaledobject.yaml")
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	err = verifytest.Kubeconform(p)
	if errors.Is(err, verifytest.ErrToolMissing) {
		t.Skipf("SKIPPING kubeconform: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "pollInterval") {
		t.Errorf("kubeconform accepted an unknown field: %v", err)
	}
}

func unmarshal(t *testing.T, set *artifact.Set, path string) map[string]any {
	t.Helper()
	b, ok := set.Get(path)
	if !ok {
		t.Fatalf("%s not generated; have %v", path, set.Paths())
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

var dig = irtest.Dig

func TestResearchFleet(t *testing.T) {
	f := lower(t, "../../examples/research-fleet/fleet.yaml")
	set := generate(t, f)
	want := []string{}
	for _, c := range []string{"coder", "researcher"} {
		for _, k := range []string{"configmap", "deployment", "scaledobject", "serviceaccount", "triggerauthentication"} {
			want = append(want, "k8s/"+c+"/"+k+".yaml")
		}
	}
	if got := set.Paths(); !reflect.DeepEqual(got, want) {
		t.Fatalf("paths = %v\nwant %v", got, want)
	}

	for _, tc := range []struct {
		class                string
		perReplica, min, max string
		cooldown, grace      float64
	}{
		// researcher: step max 10 m → 630 s grace; coder: 20 m → 1230 s.
		{"researcher", "10", "2", "60", 300, 630},
		{"coder", "4", "1", "20", 600, 1230},
	} {
		a := f.Agent(tc.class)
		so := unmarshal(t, set, "k8s/"+tc.class+"/scaledobject.yaml")
		if dig(t, so, "metadata", "namespace") != "agents" || dig(t, so, "metadata", "name") != tc.class+"-worker" {
			t.Errorf("%s: scaledobject metadata %v", tc.class, so["metadata"])
		}
		spec := so["spec"].(map[string]any)
		if dig(t, spec, "scaleTargetRef", "name") != tc.class+"-worker" {
			t.Errorf("%s: scaleTargetRef %v", tc.class, spec["scaleTargetRef"])
		}
		if strconv.FormatFloat(spec["minReplicaCount"].(float64), 'f', -1, 64) != tc.min ||
			strconv.FormatFloat(spec["maxReplicaCount"].(float64), 'f', -1, 64) != tc.max {
			t.Errorf("%s: replicas %v..%v", tc.class, spec["minReplicaCount"], spec["maxReplicaCount"])
		}
		if spec["pollingInterval"] != 30.0 || spec["cooldownPeriod"] != tc.cooldown {
			t.Errorf("%s: polling %v cooldown %v", tc.class, spec["pollingInterval"], spec["cooldownPeriod"])
		}
		if w := dig(t, spec, "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"); w != tc.cooldown {
			t.Errorf("%s: scale-down stabilization %v, want the cooldown %v", tc.class, w, tc.cooldown)
		}
		trig := dig(t, spec, "triggers", 0).(map[string]any)
		if trig["type"] != "aws-sqs-queue" || dig(t, trig, "authenticationRef", "name") != tc.class+"-queue-auth" {
			t.Errorf("%s: trigger %v", tc.class, trig)
		}
		wantMeta := map[string]any{
			"queueURL":              "research-" + tc.class + ".fifo",
			"queueLength":           tc.perReplica,
			"activationQueueLength": "0",
			"awsRegion":             "us-east-1",
			"scaleOnInFlight":       "true",
		}
		if !reflect.DeepEqual(trig["metadata"], wantMeta) {
			t.Errorf("%s: trigger metadata %v\nwant %v", tc.class, trig["metadata"], wantMeta)
		}
		// queueLength is the same number the worker runs at once.
		rc, _ := runtimeconfig.Build(f, a)
		if strconv.Itoa(rc.Concurrency) != tc.perReplica {
			t.Errorf("%s: worker concurrency %d, KEDA queueLength %s", tc.class, rc.Concurrency, tc.perReplica)
		}

		ta := unmarshal(t, set, "k8s/"+tc.class+"/triggerauthentication.yaml")
		if ta["kind"] != "TriggerAuthentication" || dig(t, ta, "metadata", "name") != tc.class+"-queue-auth" ||
			!reflect.DeepEqual(ta["spec"], map[string]any{"podIdentity": map[string]any{"provider": "aws", "roleArn": "arn:aws:iam::111122223333:role/research-keda-scaler"}}) {
			t.Errorf("%s: triggerauthentication %v", tc.class, ta)
		}

		// The ConfigMap carries exactly the rendered runtime config (runtime/<class>.json).
		cm := unmarshal(t, set, "k8s/"+tc.class+"/configmap.yaml")
		rendered, err := runtimeconfig.Render(f, a)
		if err != nil {
			t.Fatal(err)
		}
		if got := dig(t, cm, "data", "config.json"); got != string(rendered) {
			t.Errorf("%s: ConfigMap config.json differs from runtimeconfig.Render:\n%v", tc.class, got)
		}
		if dig(t, cm, "metadata", "name") != tc.class+"-worker-config" {
			t.Errorf("%s: configmap name %v", tc.class, dig(t, cm, "metadata", "name"))
		}

		sa := unmarshal(t, set, "k8s/"+tc.class+"/serviceaccount.yaml")
		if dig(t, sa, "metadata", "name") != tc.class+"-worker" || dig(t, sa, "metadata", "annotations") != nil {
			t.Errorf("%s: serviceaccount %v (Pod Identity needs no annotation)", tc.class, sa)
		}

		dep := unmarshal(t, set, "k8s/"+tc.class+"/deployment.yaml")
		if _, has := dep["spec"].(map[string]any)["replicas"]; has {
			t.Errorf("%s: deployment sets replicas; KEDA owns the count", tc.class)
		}
		pod := dig(t, dep, "spec", "template", "spec").(map[string]any)
		grace := pod["terminationGracePeriodSeconds"].(float64)
		if grace != tc.grace || grace < a.StepMax.Seconds() {
			t.Errorf("%s: terminationGracePeriodSeconds %v, want %v (≥ step max %v)", tc.class, grace, tc.grace, a.StepMax)
		}
		if pod["serviceAccountName"] != tc.class+"-worker" {
			t.Errorf("%s: serviceAccountName %v", tc.class, pod["serviceAccountName"])
		}
		ctr := dig(t, pod, "containers", 0).(map[string]any)
		if ctr["image"] != "ghcr.io/fleetc/fleet-worker:0.1.0" {
			t.Errorf("%s: image %v", tc.class, ctr["image"])
		}
		if !reflect.DeepEqual(ctr["args"], []any{"--config", "/etc/fleet/config.json", "--mode", "poll", "--drain-timeout", strconv.Itoa(int(a.StepMax.Seconds())) + "s"}) {
			t.Errorf("%s: args %v", tc.class, ctr["args"])
		}
		if !reflect.DeepEqual(ctr["env"], []any{map[string]any{"name": "AWS_REGION", "value": "us-east-1"},
			map[string]any{"name": "FLEET_METRICS_ADDR", "value": ":9090"}}) {
			t.Errorf("%s: env %v", tc.class, ctr["env"])
		}
		checkMetricsPort(t, tc.class, dig(t, dep, "spec", "template").(map[string]any))
		if dig(t, ctr, "securityContext", "readOnlyRootFilesystem") != true || dig(t, pod, "securityContext", "runAsNonRoot") != true ||
			dig(t, ctr, "securityContext", "allowPrivilegeEscalation") != false {
			t.Errorf("%s: security contexts %v / %v", tc.class, pod["securityContext"], ctr["securityContext"])
		}
		if dig(t, ctr, "volumeMounts", 0, "mountPath") != "/etc/fleet" || dig(t, pod, "volumes", 0, "configMap", "name") != tc.class+"-worker-config" {
			t.Errorf("%s: config mount %v / %v", tc.class, ctr["volumeMounts"], pod["volumes"])
		}
		labels := dig(t, dep, "metadata", "labels").(map[string]any)
		if labels["app.kubernetes.io/name"] != tc.class+"-worker" || labels["app.kubernetes.io/part-of"] != "research" {
			t.Errorf("%s: labels %v", tc.class, labels)
		}
		// The selector must match the pod template's labels or the API server refuses it.
		sel := dig(t, dep, "spec", "selector", "matchLabels").(map[string]any)
		podLabels := dig(t, dep, "spec", "template", "metadata", "labels").(map[string]any)
		for k, v := range sel {
			if podLabels[k] != v {
				t.Errorf("%s: selector %s=%v not on the pod template", tc.class, k, v)
			}
		}
		if h := dig(t, dep, "spec", "template", "metadata", "annotations", ConfigHashAnnotation); h == nil || len(h.(string)) != 64 {
			t.Errorf("%s: config hash annotation %v", tc.class, h)
		}
	}
}

func TestScaleToZeroClass(t *testing.T) {
	f := lowerSrc(t, zeroFleet)
	set := generate(t, f)
	so := unmarshal(t, set, "k8s/crawler/scaledobject.yaml")
	m := dig(t, so, "spec", "triggers", 0, "metadata").(map[string]any)
	if m["scaleOnInFlight"] != "false" || m["activationQueueLength"] != "2" || m["queueLength"] != "3" ||
		m["queueURL"] != "zero-crawler" {
		t.Errorf("trigger metadata %v", m)
	}
	if dig(t, so, "spec", "minReplicaCount") != 0.0 || dig(t, so, "spec", "cooldownPeriod") != 7200.0 {
		t.Errorf("spec %v", so["spec"])
	}
	// A 2 h cooldown exceeds the HPA's 1 h stabilization ceiling.
	if w := dig(t, so, "spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"); w != 3600.0 {
		t.Errorf("stabilization %v, want 3600", w)
	}
	dep := unmarshal(t, set, "k8s/crawler/deployment.yaml")
	if ns := dig(t, dep, "metadata", "namespace"); ns != "batch" {
		t.Errorf("namespace %v", ns)
	}
	if img := dig(t, dep, "spec", "template", "spec", "containers", 0, "image"); img != "registry.example.com/crawler:2" {
		t.Errorf("image %v, want the class image", img)
	}
	if g := dig(t, dep, "spec", "template", "spec", "terminationGracePeriodSeconds"); g != 5430.0 {
		t.Errorf("grace %v, want 90 m + 30 s", g)
	}
}

func TestNonEKSClassesProduceNothing(t *testing.T) {
	for _, ex := range []string{"minimal", "async-tools"} {
		f := lower(t, "../../examples/"+ex+"/fleet.yaml")
		files, ds := Generate(f, configs(t, f))
		if len(files) != 0 || len(ds) != 0 {
			t.Errorf("%s: %d files, %v", ex, len(files), ds)
		}
	}
	f := lower(t, "../../examples/minimal/fleet.yaml")
	if _, err := Class(f, f.Agent("greeter"), []byte("{}\n")); err == nil {
		t.Error("Class accepted a lambda class")
	}
	// An eks class whose config could not be rendered (G001 reports it) gets no manifests.
	r := lower(t, "../../examples/research-fleet/fleet.yaml")
	if files, ds := Generate(r, nil); len(files) != 0 || len(ds) != 0 {
		t.Errorf("no configs: %d files, %v", len(files), ds)
	}
	if _, err := Class(r, r.Agent("researcher"), nil); err == nil {
		t.Error("Class accepted a class without a config")
	}
}

// TestFormat: sigs.k8s.io/yaml sorts keys, the same bytes come out every run, and a
// config change changes the pod-template hash (so the pods roll).
func TestFormat(t *testing.T) {
	f := lower(t, "../../examples/research-fleet/fleet.yaml")
	a, b := generate(t, f), generate(t, f)
	for _, p := range a.Paths() {
		x, _ := a.Get(p)
		y, _ := b.Get(p)
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs", p)
		}
		var top []string
		for _, line := range strings.Split(string(x), "\n") {
			if line != "" && line[0] != ' ' && line[0] != '-' {
				top = append(top, strings.SplitN(line, ":", 2)[0])
			}
		}
		if !sort.StringsAreSorted(top) {
			t.Errorf("%s: top-level keys not sorted: %v", p, top)
		}
	}
	ag := f.Agent("researcher")
	d1 := DeploymentFor(f, ag, []byte(`{"a":1}`))
	d2 := DeploymentFor(f, ag, []byte(`{"a":2}`))
	if d1.Spec.Template.Metadata.Annotations[ConfigHashAnnotation] == d2.Spec.Template.Metadata.Annotations[ConfigHashAnnotation] {
		t.Error("config hash does not change with the config")
	}
}

// queueURL is an SQS queue URL (an ECR image reference also ends in amazonaws.com).
var queueURL = regexp.MustCompile(`sqs\.[a-z0-9-]+\.amazonaws\.com`)

// TestNoPlaceholders: KEDA resolves a short queue name in awsRegion, so the manifests are
// complete as generated — no ${...} placeholder and no account id to substitute at deploy time.
func TestNoPlaceholders(t *testing.T) {
	for _, c := range cases(t) {
		files, ds := Generate(c.f, configs(t, c.f))
		if ds.HasErrors() {
			t.Fatalf("%s: %v", c.name, ds)
		}
		for _, fl := range files {
			if bytes.Contains(fl.Bytes, []byte("${")) || queueURL.Match(fl.Bytes) {
				t.Errorf("%s/%s still holds a placeholder or a full queue URL", c.name, fl.Path)
			}
		}
		for _, a := range c.f.Agents {
			if a.K8s == nil {
				continue
			}
			so := ScaledObjectFor(c.f, a)
			if got := so.Spec.Triggers[0].Metadata["queueURL"]; got != a.Queue.Name {
				t.Errorf("%s/%s: queueURL %q, want the queue name %q", c.name, a.Name, got, a.Queue.Name)
			}
		}
	}
}

// TestCodes: Codes documents exactly the codes keda.go emits.
func TestCodes(t *testing.T) {
	src, err := os.ReadFile("keda.go")
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:Errorf|Warnf)\("([A-Z]+[0-9]+)"`).FindAllSubmatch(src, -1) {
		emitted[string(m[1])] = true
	}
	listed := map[string]bool{}
	for _, c := range Codes() {
		listed[c.ID] = true
		if !emitted[c.ID] || c.Severity != "error" && c.Severity != "warning" || c.Summary == "" || len(c.Explain) < 80 {
			t.Errorf("%+v: not emitted or incompletely documented", c)
		}
	}
	if !reflect.DeepEqual(emitted, listed) || len(listed) == 0 {
		t.Errorf("emitted %v, listed %v", emitted, listed)
	}
}

// checkMetricsPort: the pod's metrics listener (FLEET_METRICS_ADDR, which the runtime config
// leaves off), its container port, both probes and the Prometheus scrape annotations name the
// same port and path.
func checkMetricsPort(t *testing.T, class string, tmpl map[string]any) {
	t.Helper()
	ctr := dig(t, tmpl, "spec", "containers", 0).(map[string]any)
	listen := ""
	for _, e := range ctr["env"].([]any) {
		if e := e.(map[string]any); e["name"] == "FLEET_METRICS_ADDR" {
			listen = e["value"].(string)
		}
	}
	_, port, ok := strings.Cut(listen, ":")
	if !ok || port == "" {
		t.Fatalf("%s: FLEET_METRICS_ADDR = %q, want a listen address with a port", class, listen)
	}
	ports := ctr["ports"].([]any)
	if len(ports) != 1 || dig(t, ports[0], "name") != "metrics" || fmt.Sprint(dig(t, ports[0], "containerPort")) != port {
		t.Errorf("%s: container ports %v, listener %s", class, ports, listen)
	}
	for _, p := range []string{"readinessProbe", "livenessProbe"} {
		if dig(t, ctr, p, "httpGet", "path") != "/metrics" || dig(t, ctr, p, "httpGet", "port") != "metrics" {
			t.Errorf("%s: %s %v", class, p, ctr[p])
		}
	}
	ann := dig(t, tmpl, "metadata", "annotations").(map[string]any)
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != port || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("%s: scrape annotations %v, listener %s", class, ann, listen)
	}
}
