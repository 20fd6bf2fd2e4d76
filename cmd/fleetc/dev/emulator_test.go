package dev

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/deploy"
)

// dev takes the emulator at --endpoint as --emulator names it, else as detected there (its
// gap profile follows); one it cannot tell asks for --emulator, and dev starts no emulator
// but kumo. The server here answers kumo's probe as kumo v0.33.1 does (GET /health).
func TestEnsureEmulatorKind(t *testing.T) {
	kumo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			_, _ = w.Write([]byte(`{"status":"healthy"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer kumo.Close()
	ctx, dir := context.Background(), t.TempDir()
	for kind, want := range map[deploy.Emulator]deploy.Emulator{"": deploy.Kumo, deploy.Moto: deploy.Moto} {
		emu, err := ensureEmulator(ctx, kumo.URL, kind, dir)
		if err != nil || emu.kind != want || emu.endpoint != kumo.URL || emu.stop != nil {
			t.Errorf("--emulator %q: %+v, %v; want %s at %s, not started by dev", kind, emu, err, want, kumo.URL)
		}
	}
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	if _, err := ensureEmulator(ctx, other.URL, "", dir); err == nil || !strings.Contains(err.Error(), "--emulator") {
		t.Errorf("an endpoint that is no known emulator: %v", err)
	}
	if _, err := ensureEmulator(ctx, "", deploy.Moto, dir); err == nil || !strings.Contains(err.Error(), "needs --endpoint") {
		t.Errorf("--emulator moto without --endpoint: %v", err)
	}
}
