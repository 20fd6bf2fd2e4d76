package dev

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fleetc/fleetc/compiler/deploy"
)

// Kumo is where `fleetc dev` runs kumo when it starts it: its Step Functions and
// EventBridge integrations call back to this address whatever the listener.
const (
	KumoAddr     = "127.0.0.1:4566"
	KumoEndpoint = "http://" + KumoAddr
	// KumoVersion is the kumo fleetc's emulator gaps were measured against.
	KumoVersion = "v0.33.1"
)

// KumoHowTo says how to get kumo when it is missing.
const KumoHowTo = "no emulator: pass --endpoint URL (an AWS emulator already running), or install kumo " + KumoVersion +
	" and fleetc dev starts it: `go install github.com/sivchari/kumo/cmd/kumo@" + KumoVersion + "` (puts kumo on PATH), " +
	"or from a fleetc checkout `bash tools/install.sh kumo` (bin/kumo)"

// healthy reports whether an emulator answers GET /health at endpoint.
func healthy(ctx context.Context, endpoint string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// findKumo returns bin/kumo in the working directory or an ancestor holding go.mod, else
// kumo on PATH, else "".
func findKumo() string {
	if dir, err := os.Getwd(); err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if p := filepath.Join(dir, "bin", "kumo"); isExec(p) {
					return p
				}
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if p, err := exec.LookPath("kumo"); err == nil {
		return p
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// emulator is the emulator dev uses; stop is nil unless dev started it.
type emulator struct {
	endpoint string
	kind     deploy.Emulator // whose gap profile the override applies
	stop     func()
}

// ensureEmulator uses endpoint if given (kind, or the emulator detected there), else kumo on
// KumoAddr if it answers, else starts kumo when installed.
func ensureEmulator(ctx context.Context, endpoint string, kind deploy.Emulator, logDir string) (*emulator, error) {
	if endpoint != "" {
		detected, err := deploy.DetectEmulator(ctx, endpoint)
		if kind == "" {
			if err != nil {
				return nil, err
			}
			kind = detected
		}
		return &emulator{endpoint: endpoint, kind: kind}, nil
	}
	if kind != "" && kind != deploy.Kumo {
		return nil, fmt.Errorf("--emulator %s needs --endpoint: dev starts only kumo itself", kind)
	}
	if healthy(ctx, KumoEndpoint) {
		return &emulator{endpoint: KumoEndpoint, kind: deploy.Kumo}, nil
	}
	bin := findKumo()
	if bin == "" {
		return nil, fmt.Errorf("%s", KumoHowTo)
	}
	logPath := filepath.Join(logDir, "kumo.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--host", "127.0.0.1", "--port", "4566")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: Ctrl-C reaches fleetc, which stops kumo last, after teardown.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if healthy(ctx, KumoEndpoint) {
			return &emulator{endpoint: KumoEndpoint, kind: deploy.Kumo, stop: stop}, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%s exited at start (log: %s)", bin, logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
	stop()
	return nil, fmt.Errorf("started %s but %s/health did not answer within 30s (log: %s)", bin, KumoEndpoint, logPath)
}
