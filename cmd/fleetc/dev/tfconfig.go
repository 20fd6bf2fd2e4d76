package dev

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/fleetc/fleetc/internal/tfmirror"
)

// envCLIConfig is the variable naming Terraform's CLI config file.
const envCLIConfig = "TF_CLI_CONFIG_FILE"

// terraformConfig is the Terraform CLI config dev's terraform reads, so `fleetc dev` works
// offline with no setup: "" (Terraform's own choice) when the user has a config (the file
// TF_CLI_CONFIG_FILE names, else ~/.terraformrc, exists) or no provider mirror is found
// (tfmirror.Find); else dir/terraformrc, written to install providers from the mirror only,
// with a note for the user saying so.
func terraformConfig(dir string) (path, note string, err error) {
	user := os.Getenv(envCLIConfig)
	if user == "" {
		home, herr := os.UserHomeDir()
		if herr != nil {
			return "", "", nil
		}
		user = filepath.Join(home, ".terraformrc")
	}
	if _, serr := os.Stat(user); serr == nil {
		return "", "", nil
	}
	mirror, err := tfmirror.Find()
	if err != nil || mirror == "" {
		return "", "", err
	}
	// Absolute: terraform runs in the workspace's directory, not here (-o out is relative).
	if path, err = filepath.Abs(filepath.Join(dir, "terraformrc")); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(path, []byte(tfmirror.CLIConfig(mirror)), 0o644); err != nil {
		return "", "", err
	}
	note = fmt.Sprintf("fleetc dev: terraform runs with %s=%s, written by dev: providers from the mirror %s only (offline); %s does not exist (set %s to use your own config)",
		envCLIConfig, path, mirror, user, envCLIConfig)
	return path, note, nil
}
