package worker_test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssTarget is the memory budget for one worker process.
const rssTarget = 50 << 20

// The real binary, at its configured concurrency, completes a few hundred steps while its
// peak resident set (VmHWM, the kernel's high-water mark) stays under the budget.
func TestBinaryPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the 300-step memory run")
	}
	e := newEnv(t, envOpts{visibility: 30, heartbeat: 10, concurrency: 10})
	ks := keys("rss", 300)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k}), "")
	}
	p := e.startBinary(t)
	peak := 0
	deadline := time.Now().Add(90 * time.Second)
	for {
		if hwm, err := vmHWM(p.cmd.Process.Pid); err == nil && hwm > peak {
			peak = hwm
		}
		_, done := e.fx.snapshot()
		if len(done) == len(ks) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d steps completed", len(done), len(ks))
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.account(ks, nil, 30*time.Second)
	t.Logf("fleet-worker peak RSS after %d steps at concurrency 10: %.1f MiB", len(ks), float64(peak)/(1<<20))
	if peak == 0 {
		t.Fatal("could not read the worker's VmHWM")
	}
	if peak > rssTarget {
		t.Errorf("peak RSS %.1f MiB is above the %d MiB budget", float64(peak)/(1<<20), rssTarget>>20)
	}
}

// vmHWM reads a process's peak resident set size in bytes from /proc.
func vmHWM(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
