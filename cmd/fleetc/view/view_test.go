package view

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/spec/diag"
)

func diags(errs, warns int) diag.Diagnostics {
	var ds diag.Diagnostics
	for range errs {
		ds.Errorf("P001", "/fleet", "an error")
	}
	for range warns {
		ds.Warnf("M001", "/models/fast", "a warning")
	}
	return ds
}

// TestJudge: errors always fail, warnings only under --strict, and the counts are the
// diagnostics'.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		errs, warns int
		strict      bool
		valid       bool
	}{
		{0, 0, false, true}, {0, 0, true, true},
		{0, 2, false, true}, {0, 2, true, false},
		{1, 0, false, false}, {1, 1, true, false},
	} {
		v := Judge(diags(tc.errs, tc.warns), tc.strict)
		if v.Valid != tc.valid || v.Errors != tc.errs || v.Warnings != tc.warns || v.Strict != tc.strict {
			t.Errorf("%d error(s), %d warning(s), strict %v: %+v, want valid %v", tc.errs, tc.warns, tc.strict, v, tc.valid)
		}
	}
}

// TestStopped: a JSON command that stops on its diagnostics prints them as its document on
// stdout, nothing on stderr; a text one prints them on stderr, nothing on stdout.
func TestStopped(t *testing.T) {
	ds := diags(1, 1)
	var out, errb bytes.Buffer
	Stopped(JSON, &out, &errb, ds)
	var doc struct {
		FormatVersion int               `json:"format_version"`
		Diagnostics   []json.RawMessage `json:"diagnostics"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.FormatVersion != 2 || len(doc.Diagnostics) != 2 || errb.Len() > 0 {
		t.Errorf("json: %v %+v, stderr %q", err, doc, errb.String())
	}
	out.Reset()
	Stopped(Text, &out, &errb, ds)
	if out.Len() > 0 || !strings.Contains(errb.String(), "M001: warning: a warning") || !strings.Contains(errb.String(), "1 error(s), 1 warning(s)\n") {
		t.Errorf("text: stdout %q, stderr %q", out.String(), errb.String())
	}
}

// TestAside: warnings beside a result are printed; no diagnostics, no output.
func TestAside(t *testing.T) {
	var b bytes.Buffer
	Aside(&b, nil)
	if b.Len() > 0 {
		t.Errorf("printed %q for no diagnostics", b.String())
	}
	Aside(&b, diags(0, 1))
	if b.String() != "<input>: M001: warning: a warning\n0 error(s), 1 warning(s)\n" {
		t.Errorf("got %q", b.String())
	}
}

// TestGitHubStrict: under --strict a warning that fails the verdict is annotated as an error.
func TestGitHubStrict(t *testing.T) {
	ds := diags(0, 1)
	for strict, want := range map[bool]string{false: "::warning ", true: "::error "} {
		var b bytes.Buffer
		GitHub(&b, ds, Judge(ds, strict))
		if !strings.HasPrefix(b.String(), want) {
			t.Errorf("strict %v: %q, want %q", strict, b.String(), want)
		}
	}
}

// OneLine keeps outside text on one line and off the terminal's controls.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":               "plain text",
		"two\nlines\r\n  spaced":   "two lines spaced",
		"red \x1b[31mtext":         "red \uFFFD[31mtext",
		"csi \u009b31m":            "csi \uFFFD31m",
		"bidi \u202eevil\u202c ok": "bidi \uFFFDevil\uFFFD ok",
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
