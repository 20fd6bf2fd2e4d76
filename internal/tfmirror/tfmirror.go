// Package tfmirror finds a Terraform provider filesystem mirror and writes the Terraform CLI
// config that installs providers from it alone, so `terraform init` needs no network: `fleetc
// dev` writes one when the user has none, and the tests and tools/terraformrc.sh use the same
// places and the same config.
package tfmirror

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvMirror names an operator-supplied mirror (a directory holding registry.terraform.io/, or
// a path inside one); it wins over DefaultDir.
const EnvMirror = "FLEETC_TF_PROVIDER_MIRROR"

// DefaultDir is where this project's machines keep the hashicorp/aws provider mirror.
const DefaultDir = "/opt/tf-plugins"

// registryDir is the directory a filesystem mirror holds, per provider source host.
const registryDir = "registry.terraform.io"

// ErrBadEnv is Find's answer when EnvMirror names no mirror.
var ErrBadEnv = errors.New(EnvMirror + " has no " + registryDir + "/ inside")

// Find returns the mirror named by EnvMirror, else DefaultDir when it holds one, else "".
func Find() (string, error) {
	if m := os.Getenv(EnvMirror); m != "" {
		root := Root(m)
		if !isMirror(root) {
			return "", fmt.Errorf("%w: %s=%s", ErrBadEnv, EnvMirror, m)
		}
		return root, nil
	}
	if isMirror(DefaultDir) {
		return DefaultDir, nil
	}
	return "", nil
}

// Root accepts a path inside a mirror and returns the directory containing registry.terraform.io.
func Root(p string) string {
	if i := strings.Index(p, "/"+registryDir); i >= 0 {
		return p[:i]
	}
	return p
}

func isMirror(root string) bool {
	fi, err := os.Stat(filepath.Join(root, registryDir))
	return err == nil && fi.IsDir()
}

// CLIConfig is a Terraform CLI config that installs every provider from mirror only.
func CLIConfig(mirror string) string {
	return fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror)
}
