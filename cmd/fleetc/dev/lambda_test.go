package dev

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/runtime/lambda/sqsevent"
)

// Settle reads a function's answer as the Lambda event source mapping documents for
// ReportBatchItemFailures ("Implementing partial batch responses", Lambda developer guide):
// the listed items stay, the rest are deleted; a function error, an unparsable response or
// an identifier not in the batch fails the whole batch.
func TestSettle(t *testing.T) {
	ev := sqsevent.Event{Records: []sqsevent.Record{{MessageID: "a"}, {MessageID: "b"}, {MessageID: "c"}}}
	for _, c := range []struct {
		name   string
		status int
		body   string
		del    []string
		failed int
		whole  string
	}{
		{"all succeeded", 200, `{"batchItemFailures":[]}`, []string{"a", "b", "c"}, 0, ""},
		{"null response", 200, `null`, []string{"a", "b", "c"}, 0, ""},
		{"empty response", 200, ``, []string{"a", "b", "c"}, 0, ""},
		{"one failed", 200, `{"batchItemFailures":[{"itemIdentifier":"b"}]}`, []string{"a", "c"}, 1, ""},
		{"two failed", 200, `{"batchItemFailures":[{"itemIdentifier":"c"},{"itemIdentifier":"a"}]}`, []string{"b"}, 2, ""},
		{"function error (RIE answers 502)", 502, ``, nil, 0, "function error: status 502"},
		{"function error in the body", 200, `{"errorType":"Runtime.ExitError","errorMessage":"exit status 1"}`, nil, 0, "function error Runtime.ExitError"},
		{"not a batch response", 200, `"ok"`, nil, 0, "not a batch response"},
		{"unknown identifier", 200, `{"batchItemFailures":[{"itemIdentifier":"z"}]}`, nil, 0, `not in the batch: "z"`},
		{"empty identifier", 200, `{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, 0, `not in the batch: ""`},
	} {
		del, failed, whole := Settle(ev, c.status, []byte(c.body))
		if c.whole != "" {
			if whole == nil || !strings.Contains(whole.Error(), c.whole) || del != nil {
				t.Errorf("%s: whole = %v, del = %v; want the whole batch failed with %q", c.name, whole, del, c.whole)
			}
			continue
		}
		var got []string
		for id := range del {
			got = append(got, id)
		}
		slices.Sort(got)
		if whole != nil || !slices.Equal(got, c.del) || failed != c.failed {
			t.Errorf("%s: del %v failed %d whole %v; want del %v failed %d", c.name, got, failed, whole, c.del, c.failed)
		}
	}
}

// The command line runs the worker the way the image's entrypoint runs in Lambda, under RIE
// with both of its addresses given (RIE's defaults, 0.0.0.0:8080 and 127.0.0.1:9001, would
// collide between two lambda classes).
func TestRIEArgs(t *testing.T) {
	got := strings.Join(rieArgs("127.0.0.1:1", "127.0.0.1:2", "/w/fleet-worker", "/d/c.json"), " ")
	want := "--log-level warn --runtime-interface-emulator-address 127.0.0.1:1 --runtime-api-address 127.0.0.1:2 /w/fleet-worker --config /d/c.json --mode lambda"
	if got != want {
		t.Errorf("rieArgs = %q\nwant      %q", got, want)
	}
}

// Without RIE anywhere dev falls back to poll mode (""); a named one must be executable.
func TestFindRIE(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Chdir(t.TempDir())
	if got, err := findRIE(""); got != "" || err != nil {
		t.Errorf("findRIE with none installed = %q, %v; want \"\", nil", got, err)
	}
	if _, err := findRIE("/nonexistent/aws-lambda-rie"); err == nil {
		t.Errorf("findRIE of a missing --rie-bin: no error")
	}
	bin := filepath.Join(t.TempDir(), RIEName)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(bin))
	if got, _ := findRIE(""); got != bin {
		t.Errorf("findRIE with %s on PATH = %q", bin, got)
	}
}
