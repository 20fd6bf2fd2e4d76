package compiler_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"sigs.k8s.io/yaml"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// TestEKSIdentityAcrossArtifacts is the cross-artifact check of issue 7 item 9: every eks class
// gets a Pod Identity association whose cluster, namespace and service account are the ones its
// Deployment runs as, with the class's worker role, whose trust admits exactly that service
// account on that cluster; every TriggerAuthentication names the scaler role the Terraform
// creates, which only the named KEDA operator role may assume and which may only read the eks
// queues' depth. Classes on other runtimes get no association.
func TestEKSIdentityAcrossArtifacts(t *testing.T) {
	for _, tc := range []struct {
		spec, cluster, operator, scalerARN string
		eks, other                         []string
	}{
		{"../examples/research-fleet/fleet.yaml", "agents-prod", "arn:aws:iam::111122223333:role/keda-operator", "arn:aws:iam::111122223333:role/research-keda-scaler",
			[]string{"coder", "researcher"}, nil},
		{kitchenSink, "sink-cluster", "arn:aws:iam::111122223333:role/platform/keda-operator", "arn:aws:iam::111122223333:role/sink-keda-scaler",
			[]string{"planner", "reviewer"}, []string{"summarizer", "indexer", "concierge", "triage"}},
		{"../examples/minimal/fleet.yaml", "", "", "", nil, []string{"greeter"}},
	} {
		t.Run(filepath.Base(filepath.Dir(tc.spec)), func(t *testing.T) {
			set := buildFile(t, tc.spec)
			tf := parseTerraform(t, set)
			assocs := tf.blocks("resource", "aws_eks_pod_identity_association")
			if len(assocs) != len(tc.eks) {
				t.Errorf("%d associations, want one per eks class %v", len(assocs), tc.eks)
			}
			for _, class := range tc.eks {
				n := strings.ReplaceAll(class, "-", "_")
				a := tf.block(t, "resource", "aws_eks_pod_identity_association", n+"_worker")
				dep := manifest(t, set, "k8s/"+class+"/deployment.yaml")
				sa := manifest(t, set, "k8s/"+class+"/serviceaccount.yaml")
				ns, saName := dig(t, dep, "metadata", "namespace"), dig(t, dep, "spec", "template", "spec", "serviceAccountName")
				if saName != dig(t, sa, "metadata", "name") || ns != dig(t, sa, "metadata", "namespace") {
					t.Errorf("%s: Deployment runs as %s/%s, ServiceAccount is %s/%s", class, ns, saName, dig(t, sa, "metadata", "namespace"), dig(t, sa, "metadata", "name"))
				}
				for attr, want := range map[string]string{
					"cluster_name": `"` + tc.cluster + `"`, "namespace": `"` + ns + `"`, "service_account": `"` + saName + `"`,
					"role_arn": "aws_iam_role." + n + "_worker.arn",
				} {
					if got := tf.attr(t, a, attr); got != want {
						t.Errorf("%s: association %s = %s, want %s", class, attr, got, want)
					}
				}
				trust := tf.text(t, tf.block(t, "data", "aws_iam_policy_document", n+"_worker_trust"))
				for _, want := range []string{
					`identifiers = ["pods.eks.amazonaws.com"]`, `actions = ["sts:AssumeRole", "sts:TagSession"]`,
					`variable = "aws:RequestTag/eks-cluster-name" values = ["` + tc.cluster + `"]`,
					`variable = "aws:RequestTag/kubernetes-namespace" values = ["` + ns + `"]`,
					`variable = "aws:RequestTag/kubernetes-service-account" values = ["` + saName + `"]`,
				} {
					if !strings.Contains(trust, want) {
						t.Errorf("%s: worker trust lacks %s:\n%s", class, want, trust)
					}
				}
				ta := manifest(t, set, "k8s/"+class+"/triggerauthentication.yaml")
				if got := dig(t, ta, "spec", "podIdentity", "roleArn"); got != tc.scalerARN {
					t.Errorf("%s: TriggerAuthentication roleArn %q, want %q", class, got, tc.scalerARN)
				}
			}
			for _, class := range tc.other {
				if slices.ContainsFunc(assocs, func(b *hclsyntax.Block) bool { return b.Labels[1] == class+"_worker" }) {
					t.Errorf("%s (not eks) has a Pod Identity association", class)
				}
			}
			if len(tc.eks) == 0 {
				if _, ok := set.Get("terraform/keda.tf"); ok {
					t.Error("keda.tf generated for a fleet without eks classes")
				}
				return
			}
			role := tf.block(t, "resource", "aws_iam_role", "keda_scaler")
			name := strings.Trim(tf.attr(t, role, "name"), `"`)
			if !strings.HasSuffix(tc.scalerARN, ":role/"+name) {
				t.Errorf("TriggerAuthentications name %s, Terraform creates role %s", tc.scalerARN, name)
			}
			scalerTrust := tf.text(t, tf.block(t, "data", "aws_iam_policy_document", "keda_scaler_trust"))
			// sts:TagSession: an operator on EKS Pod Identity carries its transitive session tags.
			if !strings.Contains(scalerTrust, `actions = ["sts:AssumeRole", "sts:TagSession"] principals { type = "AWS" identifiers = ["`+tc.operator+`"] }`) ||
				strings.Count(scalerTrust, "statement {") != 1 || strings.Contains(scalerTrust, "condition") {
				t.Errorf("scaler trust is not exactly the operator role %s:\n%s", tc.operator, scalerTrust)
			}
			var queues []string
			for _, class := range tc.eks {
				queues = append(queues, "aws_sqs_queue."+strings.ReplaceAll(class, "-", "_")+".arn")
			}
			depth := tf.text(t, tf.block(t, "data", "aws_iam_policy_document", "keda_scaler"))
			if want := `actions = ["sqs:GetQueueAttributes"] resources = [` + strings.Join(queues, ", ") + `]`; !strings.Contains(depth, want) || strings.Count(depth, "statement {") != 1 {
				t.Errorf("scaler policy is not %s:\n%s", want, depth)
			}
			pre := tf.text(t, role)
			if !strings.Contains(pre, `condition = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:role/`+name+`" == "`+tc.scalerARN+`"`) {
				t.Errorf("scaler role lacks the account precondition:\n%s", pre)
			}
		})
	}
}

type tfModule struct {
	src  map[string][]byte
	all  []*hclsyntax.Block
	file map[*hclsyntax.Block]string
}

func parseTerraform(t *testing.T, set *artifact.Set) *tfModule {
	t.Helper()
	m := &tfModule{src: map[string][]byte{}, file: map[*hclsyntax.Block]string{}}
	for _, f := range set.Files() {
		if !strings.HasPrefix(f.Path, "terraform/") || !strings.HasSuffix(f.Path, ".tf") {
			continue
		}
		hf, ds := hclsyntax.ParseConfig(f.Bytes, f.Path, hcl.InitialPos)
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		m.src[f.Path] = f.Bytes
		for _, b := range hf.Body.(*hclsyntax.Body).Blocks {
			m.all = append(m.all, b)
			m.file[b] = f.Path
		}
	}
	return m
}

func (m *tfModule) blocks(typ, label string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range m.all {
		if b.Type == typ && len(b.Labels) > 0 && b.Labels[0] == label {
			out = append(out, b)
		}
	}
	return out
}

func (m *tfModule) block(t *testing.T, typ string, labels ...string) *hclsyntax.Block {
	t.Helper()
	for _, b := range m.all {
		if b.Type == typ && slices.Equal(b.Labels, labels) {
			return b
		}
	}
	t.Fatalf("no %s %v in the generated Terraform", typ, labels)
	return nil
}

func (m *tfModule) attr(t *testing.T, b *hclsyntax.Block, name string) string {
	t.Helper()
	a, ok := b.Body.Attributes[name]
	if !ok {
		t.Fatalf("%s %v has no %s", b.Type, b.Labels, name)
	}
	r := a.Expr.Range()
	return string(r.SliceBytes(m.src[m.file[b]]))
}

var spaceRun = regexp.MustCompile(`\s+`)

// text is a block's source with whitespace runs collapsed to one space.
func (m *tfModule) text(t *testing.T, b *hclsyntax.Block) string {
	return spaceRun.ReplaceAllString(string(b.Range().SliceBytes(m.src[m.file[b]])), " ")
}

func manifest(t *testing.T, set *artifact.Set, path string) map[string]any {
	t.Helper()
	b, ok := set.Get(path)
	if !ok {
		t.Fatalf("%s not generated", path)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// dig is the string at a path of map keys (irtest.Dig fails the test when it is absent).
func dig(t *testing.T, v any, path ...any) string {
	t.Helper()
	s, _ := irtest.Dig(t, v, path...).(string)
	return s
}
