package verifytest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// TfsecFinding is one tfsec result.
type TfsecFinding struct {
	RuleID      string `json:"rule_id"`
	LongID      string `json:"long_id"`
	Severity    string `json:"severity"`
	Description string `json:"description"`
	Location    struct {
		Filename  string `json:"filename"`
		StartLine int    `json:"start_line"`
	} `json:"location"`
}

func (f TfsecFinding) String() string {
	return fmt.Sprintf("%s:%d: %s %s (%s): %s", filepath.Base(f.Location.Filename), f.Location.StartLine, f.Severity, f.LongID, f.RuleID, f.Description)
}

// Tfsec runs tfsec (bin/tfsec, from tools/tfsec) over a Terraform directory and returns its
// HIGH and CRITICAL findings that no inline `tfsec:ignore:<check>` comment accepts. A
// missing tfsec is an error wrapping ErrToolMissing.
func Tfsec(dir string) ([]TfsecFinding, error) {
	bin, err := Tool("tfsec")
	if err != nil {
		return nil, err
	}
	out, err := os.CreateTemp("", "fleetc-tfsec-*.json")
	if err != nil {
		return nil, err
	}
	out.Close()
	defer os.Remove(out.Name())
	log, code, err := run(context.Background(), nil, "", bin, dir,
		"--format", "json", "--out", out.Name(), "--no-color", "--no-module-downloads",
		"--minimum-severity", "HIGH")
	if err != nil {
		return nil, err
	}
	// tfsec exits 1 when it found something; anything else is a failure to check.
	if code != 0 && code != 1 {
		return nil, fmt.Errorf("tfsec %s: exit %d:\n%s", dir, code, log)
	}
	raw, err := os.ReadFile(out.Name())
	if err != nil {
		return nil, err
	}
	var res struct {
		Results []TfsecFinding `json:"results"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("tfsec %s: unreadable JSON (%v):\n%s", dir, err, log)
	}
	return res.Results, nil
}
