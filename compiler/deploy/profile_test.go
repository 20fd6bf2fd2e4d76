package deploy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
)

// Every example gets an override on every emulator's profile: no generated type lacks an
// emulator endpoint (the approvals example's aws_scheduler_schedule once did, so `apply
// --endpoint` refused that example before planning anything).
func TestEveryExampleHasAnOverride(t *testing.T) {
	specs, err := filepath.Glob("../../examples/*/fleet.yaml")
	if err != nil || len(specs) < 7 {
		t.Fatalf("examples: %v, %v", specs, err)
	}
	for _, spec := range specs {
		src, err := os.ReadFile(spec)
		if err != nil {
			t.Fatal(err)
		}
		env := ""
		if bytes.Contains(src, []byte("\nenvironments:")) {
			env = "dev"
		}
		res, err := compiler.Compile(compiler.Input{Path: spec, Env: env, Local: true})
		if err != nil || res.Files == nil {
			t.Fatalf("%s: %v %v", spec, err, res.Diagnostics)
		}
		for _, e := range Emulators {
			if _, err := EmulatorOverride(res.Files, "http://127.0.0.1:4566", e.Gaps()); err != nil {
				t.Errorf("%s on %s: %v", spec, e, err)
			}
		}
	}
}

// Each profile is the one its emulator's name chooses, and --emulator refuses other names.
func TestParseEmulator(t *testing.T) {
	for _, e := range Emulators {
		got, err := ParseEmulator(string(e))
		if got != e || err != nil || len(e.Gaps()) == 0 {
			t.Errorf("ParseEmulator(%q) = %q, %v; %d gaps", e, got, err, len(e.Gaps()))
		}
	}
	if got, err := ParseEmulator(""); got != "" || err != nil {
		t.Errorf(`ParseEmulator("") = %q, %v; want detection`, got, err)
	}
	if _, err := ParseEmulator("localstack"); err == nil || !strings.Contains(err.Error(), "kumo|moto") {
		t.Errorf("localstack accepted: %v", err)
	}
	if &KumoGaps[0] == &MotoGaps[0] {
		t.Error("kumo and moto share one profile")
	}
}

// DetectEmulator tells the emulators apart by what each answers and no other does: kumo's
// GET /health body, moto's GET /moto-api/data.json. The servers here answer those two routes
// as kumo v0.33.1 and moto 5.2 do (checked against both: kumo 404s /moto-api/, moto reads
// /health as a bucket and answers NoSuchBucket); the apply tests detect the real ones
// (TestExamplesApplyOnKumo, TestResearchAppliesOnMoto). Anything else asks for --emulator.
func TestDetectEmulator(t *testing.T) {
	kumo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == kumoProbe {
			_, _ = w.Write([]byte(`{"status":"healthy"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer kumo.Close()
	moto := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == motoProbe {
			_, _ = w.Write([]byte(`{"sqs": {"Queue": []}, "s3": {}}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<Error><Code>NoSuchBucket</Code></Error>"))
	}))
	defer moto.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"status":"up"}`))
	}))
	defer other.Close()
	ctx := context.Background()
	for url, want := range map[string]Emulator{kumo.URL: Kumo, moto.URL + "/": Moto} {
		if got, err := DetectEmulator(ctx, url); got != want || err != nil {
			t.Errorf("DetectEmulator(%s) = %q, %v; want %s", url, got, err, want)
		}
	}
	if got, err := DetectEmulator(ctx, other.URL); err == nil || !strings.Contains(err.Error(), "--emulator kumo|moto") {
		t.Errorf("a server that is neither: %q, %v", got, err)
	}
}
