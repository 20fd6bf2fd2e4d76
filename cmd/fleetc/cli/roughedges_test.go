package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/jsonreport"
)

// Rough edges of issue 21 that had no test of their own; the others are held by
// TestHelpEverywhere, TestCompletion, TestRulesAligned, TestBuildUpToDate,
// TestCIExampleOutputIsCommitted, TestCLIReference, TestDocsCiteExistingFiles (cmd/fleetc)
// and TestM003DefaultTimeoutIsNotAnError (compiler/check).

// schemas publish --dry-run without credentials says that once, as a usage error, and does
// not pretend to have planned anything ("would be created", "nothing written", "Re-run").
func TestSchemasPublishDryRunWithoutCredentials(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	code, out, errs := run(t, "schemas", "publish", research, "--registry", "contracts", "--dry-run")
	if code != exitUsage || out != "" || !strings.HasPrefix(errs, "fleetc schemas publish: no AWS credentials") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	for _, wrong := range []string{"would be created", "nothing written", "Re-run"} {
		if strings.Contains(out+errs, wrong) {
			t.Errorf("says %q without credentials:\n%s", wrong, errs)
		}
	}
}

// A --base-file that does not exist is reported as unreadable, not as a spec that "does
// not build".
func TestSchemasCheckMissingBaseFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "old.yaml")
	code, _, errs := run(t, "schemas", "check", research, "--base-file", missing)
	if code != exitUsage || !strings.Contains(errs, "cannot read --base-file") || strings.Contains(errs, "does not build") {
		t.Errorf("exit %d\n%s", code, errs)
	}
}

// Every JSON document fleetc prints carries format_version as an integer, the one of its
// kind (jsonreport.FormatVersion; capacity's report has its own).
func TestEveryJSONOutputHasAnIntegerFormatVersion(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"validate", "--format", "json", research}, jsonreport.FormatVersion},
		{[]string{"build", "--format", "json", research, "-o", out}, jsonreport.FormatVersion},
		{[]string{"diff", "--format", "json", research, research}, jsonreport.FormatVersion},
		{[]string{"rules", "--format", "json"}, jsonreport.FormatVersion},
		{[]string{"schemas", "check", research, "--base-file", research, "--format", "json"}, jsonreport.FormatVersion},
		{[]string{"capacity", "--format", "json", research}, jsonreport.FormatVersion},
		{[]string{"simulate", "--format", "json", "--duration", "2m", research}, jsonreport.FormatVersion},
		{[]string{"validate", "--format", "json", envExample}, jsonreport.FormatVersion},
	} {
		_, stdout, errs := run(t, tc.args...)
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Errorf("%v: not one JSON document (%v)\n%s%s", tc.args, err, stdout, errs)
			continue
		}
		var v int
		if err := json.Unmarshal(doc["format_version"], &v); err != nil || v != tc.want {
			t.Errorf("%v: format_version %s, want the integer %d", tc.args, doc["format_version"], tc.want)
		}
	}
}
