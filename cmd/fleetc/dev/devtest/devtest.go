// Package devtest runs `fleetc dev` sessions for tests, as a user runs them: the fleetc and
// fleet-worker binaries built once per test process, `fleetc dev SPEC` as a process of its
// own with its workers and handler wrapper, and its live page's API and `fleetc dev ACTION`
// to drive and read it. The cli tests (TestDevResearchFleet, TestDevMinimal) and the dev
// chaos test share it.
package devtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// Binaries builds fleetc and fleet-worker once per test process (verifytest.GoBinary).
func Binaries(t *testing.T) (fleetc, worker string) {
	t.Helper()
	return verifytest.GoBinary(t, verifytest.FleetcPkg), verifytest.GoBinary(t, verifytest.WorkerPkg)
}

// Root is the module's root: the first directory up from the test's that holds go.mod.
func Root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// UniqueSpec copies the spec at src (relative to the module's root) into dir with the first
// occurrence of each renames[i] replaced by renames[i+1], FLEET in it standing for a fresh
// name, so runs sharing kumo never collide.
func UniqueSpec(t *testing.T, dir, src string, renames ...string) (spec, fleet string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), src))
	if err != nil {
		t.Fatal(err)
	}
	fleet = "dev" + strconv.FormatInt(time.Now().UnixNano()%1e8, 36)
	s := string(b)
	for i := 0; i+1 < len(renames); i += 2 {
		s = strings.Replace(s, renames[i], strings.ReplaceAll(renames[i+1], "FLEET", fleet), 1)
	}
	spec = filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(spec, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec, fleet
}

// UniqueExample is UniqueSpec of examples/NAME/fleet.yaml.
func UniqueExample(t *testing.T, dir, example string, renames ...string) (spec, fleet string) {
	t.Helper()
	return UniqueSpec(t, dir, filepath.Join("examples", example, "fleet.yaml"), renames...)
}

var (
	rcOnce sync.Once
	rcPath string
	rcErr  error
)

// TerraformEnv skips the test without terraform or the provider mirror, and points
// terraform at the mirror (verifytest.MirrorCLIConfig). TF_CLI_CONFIG_FILE is set for the whole
// test process, to one file written once: the emulator tests run in parallel, and t.Setenv
// refuses a parallel test (a test that sets it to something else with t.Setenv runs alone,
// and puts this value back after).
func TerraformEnv(t *testing.T) {
	t.Helper()
	_, err := verifytest.Tool("terraform")
	verifytest.SkipIfMissing(t, err)
	rcOnce.Do(func() {
		var dir string
		if dir, rcErr = verifytest.ProcessTempDir("fleetc-terraformrc"); rcErr == nil {
			rcPath, rcErr = verifytest.MirrorCLIConfig(dir)
		}
	})
	verifytest.SkipIfMissing(t, rcErr)
	if rcErr != nil {
		t.Fatal(rcErr)
	}
	if err := os.Setenv("TF_CLI_CONFIG_FILE", rcPath); err != nil {
		t.Fatal(err)
	}
}

// Env is what a dev session needs: not -short, terraform, and kumo (FLEETC_DEV_TEST_ENDPOINT
// names a kumo of one's own, with KUMO_PORT set to its port so its EventBridge delivers to
// itself; its Step Functions still call 4566). It returns the emulator's endpoint.
func Env(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("fleetc dev applies a fleet to kumo: minutes")
	}
	TerraformEnv(t)
	if e := os.Getenv("FLEETC_DEV_TEST_ENDPOINT"); e != "" {
		return e
	}
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	return endpoint
}

// HealthyKumo reports whether the emulator at endpoint answers /health.
func HealthyKumo(endpoint string) bool {
	resp, err := http.Get(endpoint + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// Session is a running `fleetc dev`.
type Session struct {
	Cmd      *exec.Cmd
	Page     string // the live page's URL
	Fleetc   string
	Spec     string
	Out      string // the -o directory
	Endpoint string
	mu       sync.Mutex
	out      bytes.Buffer
	up       chan struct{}
	exited   chan struct{}
}

// Log is everything the session printed so far.
func (s *Session) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

var pageLine = regexp.MustCompile(`live page (http://127\.0\.0\.1:\d+)`)

// Start runs `fleetc dev SPEC` and waits until it says the fleet is up; the test's cleanup
// stops it.
func Start(t *testing.T, spec, out, endpoint string, extra ...string) *Session {
	t.Helper()
	fleetc, worker := Binaries(t)
	s := &Session{up: make(chan struct{}), exited: make(chan struct{}), Fleetc: fleetc, Spec: spec, Out: out, Endpoint: endpoint}
	s.Cmd = exec.Command(fleetc, append([]string{"dev", spec, "-o", out, "--endpoint", endpoint, "--port", "0", "--worker-bin", worker}, extra...)...)
	s.Cmd.Env = append(os.Environ(), "FLEETC_AWS_ENDPOINT=")
	pr, pw := io.Pipe()
	s.Cmd.Stdout, s.Cmd.Stderr = pw, pw
	if err := s.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		upSeen := false
		for sc.Scan() {
			s.mu.Lock()
			s.out.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := pageLine.FindStringSubmatch(sc.Text()); m != nil {
				s.Page = m[1]
			}
			if !upSeen && strings.Contains(sc.Text(), " is up (") {
				upSeen = true
				close(s.up)
			}
		}
	}()
	go func() { _ = s.Cmd.Wait(); pw.Close(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.Stop(t)
		}
	})
	select {
	case <-s.up:
	case <-s.exited:
		t.Fatalf("fleetc dev exited before the fleet was up:\n%s", s.Log())
	case <-time.After(10 * time.Minute):
		t.Fatalf("fleetc dev not up after 10 min:\n%s", s.Log())
	}
	return s
}

// Stop sends Ctrl-C and waits for the teardown, which must end clean: exit 0 and nothing
// left in the Terraform state (dev's destroy is the one these fleets get).
func (s *Session) Stop(t *testing.T) {
	t.Helper()
	_ = s.Cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(12 * time.Minute): // the destroy alone took over 6 min at load 30
		_ = s.Cmd.Process.Kill()
		t.Errorf("fleetc dev did not finish its teardown within 12 min:\n%s", s.Log())
		return
	}
	if !s.Cmd.ProcessState.Success() {
		t.Errorf("fleetc dev's teardown: %v\n%s", s.Cmd.ProcessState, s.Log())
	}
	states, _ := filepath.Glob(filepath.Join(s.Out, "terraform", "terraform.tfstate"))
	envStates, _ := filepath.Glob(filepath.Join(s.Out, "*", "terraform", "terraform.tfstate"))
	if states = append(states, envStates...); len(states) == 0 {
		t.Errorf("no Terraform state under %s after dev's teardown", s.Out)
	}
	for _, f := range states {
		if left, err := StateResources(f); err != nil || len(left) > 0 {
			t.Errorf("%s after dev's teardown: %v, left %v", f, err, left)
		}
	}
}

// Resource is a resource a Terraform state file holds.
type Resource struct{ Type, Name string }

// StateResources lists the resources a Terraform state file still holds: none after a clean
// destroy.
func StateResources(path string) ([]Resource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var state struct{ Resources []Resource }
	if err := json.Unmarshal(b, &state); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return state.Resources, nil
}

// FleetView is the part of GET /api/fleet the tests read.
type FleetView struct {
	Classes []struct {
		Name  string `json:"name"`
		Queue struct {
			Visible  int `json:"visible"`
			InFlight int `json:"in_flight"`
		} `json:"queue"`
		DLQ struct {
			Visible    int            `json:"visible"`
			ErrorCodes map[string]int `json:"error_codes"`
		} `json:"dlq"`
		Submitted    int `json:"submitted"`
		Completed    int `json:"completed"`
		DeadLettered int `json:"dead_lettered"`
		Retries      int `json:"retries"`
		Worker       struct {
			State  string `json:"state"`
			PID    int    `json:"pid"`
			Starts int    `json:"starts"`
		} `json:"worker"`
	} `json:"classes"`
	Events []struct {
		DetailType string `json:"detail_type"`
		Seen       int    `json:"seen"`
	} `json:"events"`
	Ledger struct {
		Submitted    int  `json:"submitted"`
		Completed    int  `json:"completed"`
		DeadLettered int  `json:"dead_lettered"`
		Pending      int  `json:"pending"`
		Balanced     bool `json:"balanced"`
	} `json:"ledger"`
	Model struct {
		Calls     int        `json:"calls"`
		Throttled int        `json:"throttled"`
		WaveUntil *time.Time `json:"wave_until"`
	} `json:"model"`
}

// Fleet is GET /api/fleet.
func (s *Session) Fleet(t *testing.T) (f FleetView) {
	t.Helper()
	resp, err := http.Get(s.Page + "/api/fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		t.Fatal(err)
	}
	return f
}

// Post posts body as JSON to the page's path.
func (s *Session) Post(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.Page+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// Action runs `fleetc dev ACTION ...` against this session's page, as a user would from a
// second terminal.
func (s *Session) Action(t *testing.T, args ...string) string {
	t.Helper()
	port := s.Page[strings.LastIndex(s.Page, ":")+1:]
	out, err := exec.Command(s.Fleetc, append(append([]string{"dev"}, args...), "--port", port)...).CombinedOutput()
	if err != nil {
		t.Fatalf("fleetc dev %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Trace runs `fleetc trace TRACE_ID --dev` against this session's page, as a user would
// from a second terminal, and answers its JSON.
func (s *Session) Trace(t *testing.T, traceID string) *trace.Timeline {
	t.Helper()
	port := s.Page[strings.LastIndex(s.Page, ":")+1:]
	out, err := exec.Command(s.Fleetc, "trace", traceID, "--dev", "--port", port, "--format", "json").Output()
	if err != nil {
		t.Fatalf("fleetc trace %s --dev: %v\n%s", traceID, err, out)
	}
	var tl trace.Timeline
	if err := json.Unmarshal(out, &tl); err != nil {
		t.Fatalf("fleetc trace %s --dev: %v\n%s", traceID, err, out)
	}
	return &tl
}

// Send runs `fleetc send` as a user would, against the same emulator ("" detail: --example).
func (s *Session) Send(t *testing.T, event, detail string) string {
	t.Helper()
	args := []string{"send", s.Spec, event, "--endpoint", s.Endpoint}
	if detail == "" {
		args = append(args, "--example")
	} else {
		args = append(args, "--detail", detail)
	}
	out, err := exec.Command(s.Fleetc, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "event id: ") {
		t.Fatalf("fleetc send: %v\n%s", err, out)
	}
	return string(out)
}

// WaitFor polls until ok holds, failing the test with /api/fleet and the log after d.
func (s *Session) WaitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; /api/fleet %+v\nlog:\n%s", what, d, s.Fleet(t), s.Log())
		}
		time.Sleep(time.Second)
	}
}
