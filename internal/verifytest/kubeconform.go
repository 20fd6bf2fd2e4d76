package verifytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// K8sSchemaDir is where the offline Kubernetes and KEDA JSON schemas live: $FLEETC_K8S_SCHEMAS,
// else <shared>/k8s-schemas (see SharedDir).
func K8sSchemaDir() (string, error) {
	if d := os.Getenv("FLEETC_K8S_SCHEMAS"); d != "" {
		return filepath.Abs(d)
	}
	shared, err := SharedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(shared, "k8s-schemas"), nil
}

// Kubeconform validates Kubernetes manifests (files or directories) with
// `kubeconform -strict -summary` against the offline schemas only. Kinds with no schema
// there fail ("could not find schema"): every kind fleetc emits must have one.
func Kubeconform(files ...string) error {
	if len(files) == 0 {
		return errors.New("verify: kubeconform: no files given")
	}
	bin, err := Tool("kubeconform")
	if err != nil {
		return err
	}
	dir, err := K8sSchemaDir()
	if err != nil {
		return err
	}
	if !isDir(dir) {
		return fmt.Errorf("%w: kubeconform schemas %s not found (CI expects shared/ at ../shared from the repo root)", ErrToolMissing, dir)
	}
	args := []string{
		"-strict", "-summary",
		"-schema-location", filepath.Join(dir, "{{ .ResourceKind }}{{ .KindSuffix }}.json"),
	}
	args = append(args, files...)
	out, code, err := run(context.Background(), nil, "", bin, args...)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kubeconform: invalid (exit %d):\n%s", code, strings.TrimSpace(out))
	}
	return nil
}
