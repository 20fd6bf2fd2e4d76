package verifytest

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// ASL checks one Amazon States Language definition file with asl-validator
// (`asl-validator --json-path FILE`), which exits non-zero and prints the reasons when the
// definition is invalid (missing transition targets, bad paths, unknown fields, ...).
func ASL(file string) error {
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("verify: asl: %w", err)
	}
	bin, err := Tool("asl-validator")
	if err != nil {
		return err
	}
	// The npm shim is a node script: without node it cannot run at all.
	if _, err := Tool("node"); err != nil {
		return fmt.Errorf("%w: asl-validator needs node on PATH (apt-get install nodejs)", ErrToolMissing)
	}
	out, code, err := run(context.Background(), nil, "", bin, "--json-path", file)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("asl-validator %s: invalid (exit %d):\n%s", file, code, strings.TrimSpace(out))
	}
	return nil
}
