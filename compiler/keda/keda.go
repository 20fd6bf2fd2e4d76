// Package keda writes the Kubernetes objects of every eks agent class: k8s/<class>/ holds a
// ConfigMap (the runtime config), a ServiceAccount, the fleet-worker Deployment, a KEDA
// TriggerAuthentication and a KEDA ScaledObject that scales the Deployment on queue depth.
//
// Objects are small local structs written with sigs.k8s.io/yaml (JSON field names, sorted
// keys); k8s.io/api is deliberately not imported. The ConfigMap embeds the runtime config bytes
// the compiler driver rendered once (the same bytes it writes as runtime/<class>.json), so the
// file and the mounted config can never differ and no backend imports another.
//
// Identity: the Deployment's ServiceAccount gets its AWS role through the EKS Pod Identity
// association the Terraform creates (aws_eks_pod_identity_association, on worker.eks.cluster),
// so it carries no IRSA annotation. KEDA's aws-sqs-queue scaler authenticates with podIdentity
// provider aws and roleArn: the operator assumes the fleet's <fleet>-keda-scaler role
// (sqs:GetQueueAttributes on the eks queues), whose ARN comes from the operator role's account.
//
// Queue URL: KEDA's aws-sqs-queue scaler documents that queueURL may be the queue's short
// name "if there's no ambiguity" (its parser takes anything that is not a URL as the queue
// name, resolved in awsRegion and the account of the identity it scales with). The class
// queue lives in the fleet's region and account, which is the scaler role's, so queueURL is
// the plain queue name.
//
// Diagnostic codes: G002 (see Codes).
package keda

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"

	"sigs.k8s.io/yaml"
)

// Names and numbers shared with the worker and with deploy tooling.
const (
	ConfigDir  = "/etc/fleet"
	ConfigKey  = "config.json"
	ConfigPath = ConfigDir + "/" + ConfigKey

	// PollingInterval is how often KEDA reads the queue depth; not a latency knob.
	PollingInterval = 30
	// DrainMargin is added to step.max for terminationGracePeriodSeconds: after SIGTERM the
	// worker stops receiving, lets the longest step finish (--drain-timeout = step.max), then
	// flushes events (up to 10 s) and telemetry before Kubernetes would SIGKILL it.
	DrainMargin = 30 * time.Second
	// maxStabilization is the HPA's ceiling for a scale-down stabilization window.
	maxStabilization = 3600

	// ConfigHashAnnotation changes with the runtime config, so a config change rolls the pods.
	ConfigHashAnnotation = "fleetc.dev/config-sha256"

	// MetricsPort is where fleet-worker serves /metrics in a pod. The runtime config turns the
	// listener off (two classes on one host would collide on any fixed port); the Deployment
	// turns it on with FLEET_METRICS_ADDR on the pod's own network namespace, exposes the
	// port, probes it and announces it to Prometheus, all from this one number.
	MetricsPort = 9090
	// EnvMetricsAddr is fleet-worker's metrics listen address variable.
	EnvMetricsAddr = "FLEET_METRICS_ADDR"
	// MetricsPath is what fleet-worker serves its metrics on.
	MetricsPath = "/metrics"

	// runAs is the distroless "nonroot" user the fleet-worker image runs as.
	runAs = 65532
)

// Generate writes k8s/<class>/*.yaml for every eks class. configs holds each class's rendered
// runtime config by class name; a class without one is skipped (its G001 says why).
func Generate(f *ir.Fleet, configs map[string][]byte) ([]artifact.File, diag.Diagnostics) {
	var (
		files []artifact.File
		ds    diag.Diagnostics
	)
	for _, a := range f.Agents {
		cfg, ok := configs[a.Name]
		if a.Runtime != "eks" || !ok {
			continue
		}
		fs, err := Class(f, a, cfg)
		if err != nil {
			d := ds.Errorf("G002", a.Path, "cannot write the Kubernetes manifests of %q: %v", a.Name, err)
			d.Detail = "This is a compiler bug or an IR built in code without the eks fields; please report it."
			continue
		}
		files = append(files, fs...)
	}
	return files, ds
}

// Class returns the five manifests of one eks class, sorted by path.
func Class(f *ir.Fleet, a *ir.Agent, cfg []byte) ([]artifact.File, error) {
	if a.K8s == nil {
		return nil, fmt.Errorf("class %q has no Kubernetes names (runtime %q)", a.Name, a.Runtime)
	}
	if cfg == nil {
		return nil, fmt.Errorf("class %q has no rendered runtime config", a.Name)
	}
	if f.Worker.EKS == nil {
		return nil, fmt.Errorf("class %q runs on eks but the fleet names no cluster (worker.eks, rule W008)", a.Name)
	}
	objs := []struct {
		file string
		obj  any
	}{
		{"configmap.yaml", ConfigMapFor(f, a, cfg)},
		{"deployment.yaml", DeploymentFor(f, a, cfg)},
		{"scaledobject.yaml", ScaledObjectFor(f, a)},
		{"serviceaccount.yaml", ServiceAccountFor(f, a)},
		{"triggerauthentication.yaml", TriggerAuthenticationFor(f, a)},
	}
	out := make([]artifact.File, 0, len(objs))
	for _, o := range objs {
		b, err := yaml.Marshal(o.obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.file, err)
		}
		out = append(out, artifact.File{Path: "k8s/" + a.Name + "/" + o.file, Bytes: b})
	}
	return out, nil
}

// ConfigMapName is the ConfigMap holding a class's runtime config.
func ConfigMapName(a *ir.Agent) string { return a.Name + "-worker-config" }

// TriggerAuthName is the TriggerAuthentication of a class's scaler.
func TriggerAuthName(a *ir.Agent) string { return a.Name + "-queue-auth" }

// QueueURL is the scaler's queueURL: the class queue's short name, which KEDA resolves in
// awsRegion (the fleet region) for the operator's own account.
func QueueURL(f *ir.Fleet, a *ir.Agent) string {
	return a.Queue.Name
}

// Code documents one diagnostic code this package emits.
type Code = diag.Code

// Codes lists every diagnostic code Generate can emit.
func Codes() []Code {
	return []Code{{
		ID: "G002", Severity: diag.Error,
		Summary: "the Kubernetes manifests of an eks class cannot be written",
		Explain: "fleetc could not build k8s/<class>/*.yaml for an eks class: its runtime config could not be rendered, a manifest failed to marshal, or the class has no Kubernetes names " +
			"(an IR built in code without the eks fields). Valid specs never reach this; it is a compiler bug, so report it with the spec that caused it.",
	}}
}

// Labels are on every object; the first two also select the Deployment's pods.
func Labels(f *ir.Fleet, a *ir.Agent) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       a.K8s.Deployment,
		"app.kubernetes.io/part-of":    f.Name,
		"app.kubernetes.io/component":  "worker",
		"app.kubernetes.io/managed-by": "fleetc",
	}
}

func selector(f *ir.Fleet, a *ir.Agent) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":    a.K8s.Deployment,
		"app.kubernetes.io/part-of": f.Name,
	}
}

// ObjectMeta is metadata.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func meta(f *ir.Fleet, a *ir.Agent, name string) ObjectMeta {
	return ObjectMeta{Name: name, Namespace: a.K8s.Namespace, Labels: Labels(f, a)}
}

// ConfigMap is a core/v1 ConfigMap.
type ConfigMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Data       map[string]string `json:"data"`
}

// ConfigMapFor holds the class's runtime config under config.json.
func ConfigMapFor(f *ir.Fleet, a *ir.Agent, cfg []byte) *ConfigMap {
	return &ConfigMap{
		APIVersion: "v1", Kind: "ConfigMap",
		Metadata: meta(f, a, ConfigMapName(a)),
		Data:     map[string]string{ConfigKey: string(cfg)},
	}
}

// ServiceAccount is a core/v1 ServiceAccount.
type ServiceAccount struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	// The worker never calls the Kubernetes API; the Pod Identity agent injects its own token.
	AutomountServiceAccountToken bool `json:"automountServiceAccountToken"`
}

// ServiceAccountFor is the identity the class's Pod Identity association binds to its role.
func ServiceAccountFor(f *ir.Fleet, a *ir.Agent) *ServiceAccount {
	return &ServiceAccount{
		APIVersion: "v1", Kind: "ServiceAccount",
		Metadata: meta(f, a, a.K8s.ServiceAccount),
	}
}

// Deployment is an apps/v1 Deployment (only the fields fleetc sets).
type Deployment struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ObjectMeta     `json:"metadata"`
	Spec       DeploymentSpec `json:"spec"`
}

// DeploymentSpec leaves replicas out: KEDA's HPA owns the count, and a replicas field
// would reset it on every apply.
type DeploymentSpec struct {
	Selector             LabelSelector      `json:"selector"`
	RevisionHistoryLimit int                `json:"revisionHistoryLimit"`
	Strategy             DeploymentStrategy `json:"strategy"`
	// MinReadySeconds is how long a new pod must stay ready before the rollout counts it
	// and goes on: a rollout's interval (0: the field is left out).
	MinReadySeconds int `json:"minReadySeconds,omitempty"`
	// ProgressDeadlineSeconds must exceed minReadySeconds (the API refuses it otherwise): the
	// rollout's interval plus Kubernetes' default 600 s; 0: left out, the default.
	ProgressDeadlineSeconds int         `json:"progressDeadlineSeconds,omitempty"`
	Template                PodTemplate `json:"template"`
}

type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type DeploymentStrategy struct {
	Type          string         `json:"type"`
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`
}

type RollingUpdate struct {
	MaxSurge       IntOrPercent `json:"maxSurge"`
	MaxUnavailable int          `json:"maxUnavailable"`
}

// IntOrPercent is Kubernetes' int-or-string of a rolling update: a pod count (1) or a
// share of the desired pods ("25%").
type IntOrPercent struct {
	N       int
	Percent bool
}

// MarshalJSON writes a count as a number and a share as "N%".
func (v IntOrPercent) MarshalJSON() ([]byte, error) {
	if v.Percent {
		return json.Marshal(strconv.Itoa(v.N) + "%")
	}
	return json.Marshal(v.N)
}

type PodTemplate struct {
	Metadata PodMeta `json:"metadata"`
	Spec     PodSpec `json:"spec"`
}

type PodMeta struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type PodSpec struct {
	ServiceAccountName            string             `json:"serviceAccountName"`
	AutomountServiceAccountToken  bool               `json:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds int64              `json:"terminationGracePeriodSeconds"`
	SecurityContext               PodSecurityContext `json:"securityContext"`
	Containers                    []Container        `json:"containers"`
	Volumes                       []Volume           `json:"volumes"`
}

type PodSecurityContext struct {
	RunAsNonRoot   bool           `json:"runAsNonRoot"`
	RunAsUser      int64          `json:"runAsUser"`
	RunAsGroup     int64          `json:"runAsGroup"`
	FSGroup        int64          `json:"fsGroup"`
	SeccompProfile SeccompProfile `json:"seccompProfile"`
}

type SeccompProfile struct {
	Type string `json:"type"`
}

type Container struct {
	Name            string                   `json:"name"`
	Image           string                   `json:"image"`
	ImagePullPolicy string                   `json:"imagePullPolicy"`
	Args            []string                 `json:"args"`
	Env             []EnvVar                 `json:"env"`
	Ports           []ContainerPort          `json:"ports"`
	ReadinessProbe  Probe                    `json:"readinessProbe"`
	LivenessProbe   Probe                    `json:"livenessProbe"`
	Resources       ResourceRequirements     `json:"resources"`
	SecurityContext ContainerSecurityContext `json:"securityContext"`
	VolumeMounts    []VolumeMount            `json:"volumeMounts"`
}

type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type ContainerPort struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
}

type Probe struct {
	HTTPGet             HTTPGetAction `json:"httpGet"`
	InitialDelaySeconds int           `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int           `json:"periodSeconds"`
	TimeoutSeconds      int           `json:"timeoutSeconds"`
	FailureThreshold    int           `json:"failureThreshold"`
}

type HTTPGetAction struct {
	Path string `json:"path"`
	Port string `json:"port"` // the named container port
}

type ResourceRequirements struct {
	Requests map[string]string `json:"requests"`
	Limits   map[string]string `json:"limits"`
}

type ContainerSecurityContext struct {
	AllowPrivilegeEscalation bool         `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   bool         `json:"readOnlyRootFilesystem"`
	RunAsNonRoot             bool         `json:"runAsNonRoot"`
	Capabilities             Capabilities `json:"capabilities"`
}

type Capabilities struct {
	Drop []string `json:"drop"`
}

type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type Volume struct {
	Name      string           `json:"name"`
	ConfigMap *ConfigMapVolume `json:"configMap,omitempty"`
	EmptyDir  *EmptyDirVolume  `json:"emptyDir,omitempty"`
}

type ConfigMapVolume struct {
	Name string `json:"name"`
}

type EmptyDirVolume struct {
	SizeLimit string `json:"sizeLimit,omitempty"`
}

// TerminationGrace is how long Kubernetes waits after SIGTERM: the longest step plus a margin
// to flush, so a scale-down drains instead of stranding in-flight messages.
func TerminationGrace(a *ir.Agent) int64 {
	return ir.Seconds(a.StepMax + DrainMargin)
}

// Args is the worker command line. fleet-worker's drain budget defaults to 25 s; a step may
// run for step.max, so the budget is raised to that and the grace period adds DrainMargin
// on top for the event flush.
func Args(a *ir.Agent) []string {
	return []string{"--config", ConfigPath, "--mode", "poll", "--drain-timeout", strconv.FormatInt(ir.Seconds(a.StepMax), 10) + "s"}
}

// rollingUpdate surges before it drains, so a rollout never drops below the running
// capacity (maxUnavailable 0). Without a rollout it adds one pod at a time; with one, the
// rollout's percent of the pods at a time, or all of them for all_at_once.
func rollingUpdate(r *ir.Rollout) DeploymentStrategy {
	surge := IntOrPercent{N: 1}
	switch {
	case r == nil:
	case r.Strategy == spec.StrategyAllAtOnce:
		surge = IntOrPercent{N: 100, Percent: true}
	default:
		surge = IntOrPercent{N: r.Percent, Percent: true}
	}
	return DeploymentStrategy{Type: "RollingUpdate", RollingUpdate: &RollingUpdate{MaxSurge: surge, MaxUnavailable: 0}}
}

// minReady is a rollout's interval in seconds: each batch of new pods runs that long, ready,
// before the next one starts (the time an alarm has to fire and `kubectl rollout undo`).
func minReady(r *ir.Rollout) int {
	if r == nil {
		return 0
	}
	return int(r.Interval / time.Second)
}

// kubeProgressDeadline is Kubernetes' default progressDeadlineSeconds.
const kubeProgressDeadline = 600

// progressDeadline leaves a rollout's batches their interval on top of Kubernetes' default
// deadline, so waiting out minReadySeconds never reads as a stalled rollout.
func progressDeadline(r *ir.Rollout) int {
	if r == nil {
		return 0
	}
	return minReady(r) + kubeProgressDeadline
}

// DeploymentFor runs fleet-worker in poll mode with the ConfigMap mounted read-only.
func DeploymentFor(f *ir.Fleet, a *ir.Agent, cfg []byte) *Deployment {
	sum := sha256.Sum256(cfg)
	metrics := "metrics"
	probe := func(initialDelay, period, failures int) Probe {
		return Probe{
			// fleet-worker serves no /healthz; /metrics answers once the listener is up.
			HTTPGet:             HTTPGetAction{Path: MetricsPath, Port: metrics},
			InitialDelaySeconds: initialDelay, PeriodSeconds: period, TimeoutSeconds: 5, FailureThreshold: failures,
		}
	}
	return &Deployment{
		APIVersion: "apps/v1", Kind: "Deployment",
		Metadata: meta(f, a, a.K8s.Deployment),
		Spec: DeploymentSpec{
			Selector:                LabelSelector{MatchLabels: selector(f, a)},
			RevisionHistoryLimit:    5,
			Strategy:                rollingUpdate(a.Rollout),
			MinReadySeconds:         minReady(a.Rollout),
			ProgressDeadlineSeconds: progressDeadline(a.Rollout),
			Template: PodTemplate{
				Metadata: PodMeta{
					Labels: Labels(f, a),
					Annotations: map[string]string{
						ConfigHashAnnotation: hex.EncodeToString(sum[:]),
						// The de-facto scrape annotations of Prometheus's Kubernetes pod discovery.
						"prometheus.io/scrape": "true",
						"prometheus.io/port":   strconv.Itoa(MetricsPort),
						"prometheus.io/path":   MetricsPath,
					},
				},
				Spec: PodSpec{
					ServiceAccountName:            a.K8s.ServiceAccount,
					TerminationGracePeriodSeconds: TerminationGrace(a),
					SecurityContext: PodSecurityContext{
						RunAsNonRoot: true, RunAsUser: runAs, RunAsGroup: runAs, FSGroup: runAs,
						SeccompProfile: SeccompProfile{Type: "RuntimeDefault"},
					},
					Containers: []Container{{
						Name:            "worker",
						Image:           a.Image,
						ImagePullPolicy: "IfNotPresent",
						Args:            Args(a),
						Env: []EnvVar{
							{Name: "AWS_REGION", Value: f.Region},
							{Name: EnvMetricsAddr, Value: ":" + strconv.Itoa(MetricsPort)},
						},
						Ports:          []ContainerPort{{Name: metrics, ContainerPort: MetricsPort, Protocol: "TCP"}},
						ReadinessProbe: probe(0, 10, 3),
						// Liveness is lenient: a worker deep in a long step must not be killed for
						// one slow scrape.
						LivenessProbe: probe(15, 20, 6),
						Resources: ResourceRequirements{
							Requests: map[string]string{"cpu": "250m", "memory": "512Mi"},
							Limits:   map[string]string{"cpu": "2", "memory": "2Gi"},
						},
						SecurityContext: ContainerSecurityContext{
							ReadOnlyRootFilesystem: true, RunAsNonRoot: true,
							Capabilities: Capabilities{Drop: []string{"ALL"}},
						},
						VolumeMounts: []VolumeMount{
							{Name: "config", MountPath: ConfigDir, ReadOnly: true},
							// The only writable path: scratch space for exec handlers.
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []Volume{
						{Name: "config", ConfigMap: &ConfigMapVolume{Name: ConfigMapName(a)}},
						{Name: "tmp", EmptyDir: &EmptyDirVolume{SizeLimit: "1Gi"}},
					},
				},
			},
		},
	}
}

// TriggerAuthentication is a keda.sh/v1alpha1 TriggerAuthentication.
type TriggerAuthentication struct {
	APIVersion string                    `json:"apiVersion"`
	Kind       string                    `json:"kind"`
	Metadata   ObjectMeta                `json:"metadata"`
	Spec       TriggerAuthenticationSpec `json:"spec"`
}

type TriggerAuthenticationSpec struct {
	PodIdentity PodIdentity `json:"podIdentity"`
}

type PodIdentity struct {
	Provider string `json:"provider"`
	RoleArn  string `json:"roleArn,omitempty"`
}

// TriggerAuthenticationFor lets the scaler read queue attributes with the fleet's KEDA scaler
// role, which the KEDA operator assumes with its own identity: no static keys in the cluster,
// and no edit to the operator's role per fleet.
func TriggerAuthenticationFor(f *ir.Fleet, a *ir.Agent) *TriggerAuthentication {
	return &TriggerAuthentication{
		APIVersion: "keda.sh/v1alpha1", Kind: "TriggerAuthentication",
		Metadata: meta(f, a, TriggerAuthName(a)),
		Spec:     TriggerAuthenticationSpec{PodIdentity: PodIdentity{Provider: "aws", RoleArn: f.Worker.EKS.ScalerRoleARN}},
	}
}

// ScaledObject is a keda.sh/v1alpha1 ScaledObject.
type ScaledObject struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   ObjectMeta       `json:"metadata"`
	Spec       ScaledObjectSpec `json:"spec"`
}

type ScaledObjectSpec struct {
	ScaleTargetRef  ScaleTarget     `json:"scaleTargetRef"`
	MinReplicaCount int             `json:"minReplicaCount"`
	MaxReplicaCount int             `json:"maxReplicaCount"`
	PollingInterval int             `json:"pollingInterval"`
	CooldownPeriod  int64           `json:"cooldownPeriod"`
	Advanced        *AdvancedConfig `json:"advanced,omitempty"`
	Triggers        []ScaleTrigger  `json:"triggers"`
}

type ScaleTarget struct {
	Name string `json:"name"`
}

type AdvancedConfig struct {
	HorizontalPodAutoscalerConfig HPAConfig `json:"horizontalPodAutoscalerConfig"`
}

type HPAConfig struct {
	Behavior HPABehavior `json:"behavior"`
}

type HPABehavior struct {
	ScaleDown HPAScalingRules `json:"scaleDown"`
}

type HPAScalingRules struct {
	StabilizationWindowSeconds int64 `json:"stabilizationWindowSeconds"`
}

type ScaleTrigger struct {
	Type              string            `json:"type"`
	AuthenticationRef AuthenticationRef `json:"authenticationRef"`
	Metadata          map[string]string `json:"metadata"`
}

type AuthenticationRef struct {
	Name string `json:"name"`
}

// ScaledObjectFor scales the class Deployment on its queue: queueLength is the messages one
// replica works at once (scaling.per_replica), and in-flight messages count by default so
// pods busy with minutes-long steps are not mistaken for idle capacity.
func ScaledObjectFor(f *ir.Fleet, a *ir.Agent) *ScaledObject {
	cooldown := ir.Seconds(a.Scaling.Cooldown)
	return &ScaledObject{
		APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject",
		Metadata: meta(f, a, a.K8s.Deployment),
		Spec: ScaledObjectSpec{
			ScaleTargetRef:  ScaleTarget{Name: a.K8s.Deployment},
			MinReplicaCount: a.Scaling.Min,
			MaxReplicaCount: a.Scaling.Max,
			PollingInterval: PollingInterval,
			CooldownPeriod:  cooldown,
			// cooldownPeriod only governs the last replica (1 → 0); the HPA's scale-down
			// stabilization window is what slows N → M, so it gets the same value.
			Advanced: &AdvancedConfig{HorizontalPodAutoscalerConfig: HPAConfig{Behavior: HPABehavior{
				ScaleDown: HPAScalingRules{StabilizationWindowSeconds: min(cooldown, maxStabilization)},
			}}},
			Triggers: []ScaleTrigger{{
				Type:              "aws-sqs-queue",
				AuthenticationRef: AuthenticationRef{Name: TriggerAuthName(a)},
				Metadata: map[string]string{
					"queueURL":              QueueURL(f, a),
					"queueLength":           strconv.Itoa(a.Scaling.PerReplica),
					"activationQueueLength": strconv.Itoa(a.Scaling.Activation),
					"awsRegion":             f.Region,
					"scaleOnInFlight":       strconv.FormatBool(a.Scaling.ScaleOnInFlight),
				},
			}},
		},
	}
}
