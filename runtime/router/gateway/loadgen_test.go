//go:build unix

package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The end-to-end benchmarks run their load generator, and the upstream it is compared
// with, in a second process: the test binary re-executed as TestLoadGenChild. So the
// benchmark's own process is the gateway alone, and its CPU time per call (getrusage) is
// the gateway's, not the client's nor the upstream's.

// loadEnvChild marks the re-executed test binary as the load generator; the upstream's
// delay per answer rides in loadEnvDelay (the child starts the upstream before it hears
// from the parent).
const (
	loadEnvChild = "FLEET_GWBENCH_CHILD"
	loadEnvDelay = "FLEET_GWBENCH_UPSTREAM_DELAY"
)

// The lines of the parent–child protocol: the child prints "UPSTREAM url", reads
// "GO {loadSpec}", runs, prints "RESULT {loadResult}".
const (
	lineUpstream = "UPSTREAM "
	lineGo       = "GO "
	lineResult   = "RESULT "
)

// loadSpec is one run of the open loop.
type loadSpec struct {
	Gateway, Token string
	Rate           int           // gateway requests per second (and as many direct ones when Direct)
	Duration       time.Duration // of the open loop
	Warmup         time.Duration // dropped from the percentiles
	Direct         bool          // interleave the same request sent to the upstream directly
	Conns          int           // bound of the client's connection pool per host
	MaxLag         time.Duration // the open loop falling further behind its schedule is saturation
}

// loadResult is what the child measured.
type loadResult struct {
	Sent        int            // gateway requests sent
	Status      map[int]int    // gateway answers by status (0: transport error)
	Errors      []string       // the first few transport errors
	Achieved    float64        // gateway requests per second actually sent
	Saturated   string         // why the run is not a measurement, "" when it is
	GW, Direct  []float64      // latencies after the warm-up, ms, sorted (200s only for GW)
	Reject      []float64      // latencies of non-200 answers, ms, sorted
	RetryAfter  map[string]int // Retry-After values seen on 429s
	ClientConns int64          // connections the client dialed after the warm-up
	ChildCPU    time.Duration  // the load generator's (and upstream's) CPU time
}

// raiseNoFile lifts the soft open-files limit to the hard one: the limit is what it is,
// and a run that needs more is reported as saturated by the open loop's own bound (the
// connection pool), never as a dial error.
func raiseNoFile() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoadGenChild is the load generator when re-executed by a benchmark; otherwise it skips.
func TestLoadGenChild(t *testing.T) {
	if os.Getenv(loadEnvChild) != "1" {
		t.Skip("the load generator of the gateway benchmarks (runs only as their child process)")
	}
	raiseNoFile()
	delay, _ := time.ParseDuration(os.Getenv(loadEnvDelay))
	up := canned(delay)
	defer up.Close()
	fmt.Printf("%s%s\n", lineUpstream, up.URL)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var spec loadSpec
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, lineGo)), &spec); err != nil {
		t.Fatal(err)
	}
	res := openLoop(spec, up.URL)
	out, _ := json.Marshal(res)
	fmt.Printf("%s%s\n", lineResult, out)
}

// canned is an OpenAI-compatible upstream answering one canned completion after delay.
func canned(delay time.Duration) *httptest.Server {
	answer := []byte(`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if delay > 0 {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
}

// openLoop sends spec.Rate requests per second on an absolute schedule, late or not, and
// stops early, saying why, when the machine cannot keep up: the schedule slips by more
// than spec.MaxLag, or more requests wait than the connection pool can carry.
func openLoop(spec loadSpec, upstream string) loadResult {
	var dials atomic.Int64
	d := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: spec.Conns, MaxIdleConnsPerHost: spec.Conns,
		DisableCompression: true, DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, n, a)
		}}}
	n := int(spec.Duration.Seconds() * float64(spec.Rate))
	gw, direct := make([]time.Duration, n), make([]time.Duration, n)
	status := make([]int, n)
	retryAfter := make([]string, n)
	var errMu sync.Mutex
	var errs []string
	send := func(url, token string) (time.Duration, int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			errMu.Lock()
			if len(errs) < 5 {
				errs = append(errs, err.Error())
			}
			errMu.Unlock()
			return 0, 0, ""
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start), resp.StatusCode, resp.Header.Get("Retry-After")
	}
	var outstanding atomic.Int64
	maxOutstanding := int64(spec.Conns) * 2
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	var res loadResult
	var dialsAtWarm int64 = -1
	begin := time.Now()
	sent := 0
	for ; sent < n; sent++ {
		at := begin.Add(time.Duration(sent) * time.Second / time.Duration(spec.Rate))
		if dl := time.Until(at); dl > 0 {
			time.Sleep(dl)
		} else if -dl > spec.MaxLag {
			res.Saturated = fmt.Sprintf("the load generator fell %v behind its schedule at request %d of %d", (-dl).Round(time.Millisecond), sent, n)
			break
		}
		// While the pool is still being dialed (the warm-up) requests may queue for it a while;
		// after it, more waiting than the pool carries twice over is saturation.
		limit := maxOutstanding
		if time.Since(begin) < spec.Warmup {
			limit *= 4
		}
		if o := outstanding.Load(); o > limit {
			res.Saturated = fmt.Sprintf("%d requests outstanding (connection pool %d per host) at request %d of %d", o, spec.Conns, sent, n)
			break
		}
		if dialsAtWarm < 0 && time.Since(begin) >= spec.Warmup {
			dialsAtWarm = dials.Load()
		}
		wg.Add(1)
		outstanding.Add(1)
		go func(i int) {
			defer wg.Done()
			defer outstanding.Add(-1)
			gw[i], status[i], retryAfter[i] = send(spec.Gateway+"/v1/chat/completions", spec.Token)
		}(sent)
		if spec.Direct {
			wg.Add(1)
			outstanding.Add(1)
			go func(i int) {
				defer wg.Done()
				defer outstanding.Add(-1)
				time.Sleep(time.Second / time.Duration(spec.Rate) / 2)
				direct[i], _, _ = send(upstream+"/v1/chat/completions", "")
			}(sent)
		}
	}
	res.Achieved = float64(sent) / time.Since(begin).Seconds()
	wg.Wait()
	res.ChildCPU = cpuTime() - cpu0
	res.Sent, res.Errors = sent, errs
	if dialsAtWarm >= 0 {
		res.ClientConns = dials.Load() - dialsAtWarm
	}
	if res.Saturated == "" && res.Achieved < 0.97*float64(spec.Rate) {
		res.Saturated = fmt.Sprintf("the load generator sent %.0f req/s of the %d asked", res.Achieved, spec.Rate)
	}
	res.Status, res.RetryAfter = map[int]int{}, map[string]int{}
	skip := int(spec.Warmup.Seconds() * float64(spec.Rate))
	for i := 0; i < sent; i++ {
		res.Status[status[i]]++
		if status[i] == http.StatusTooManyRequests {
			res.RetryAfter[retryAfter[i]]++
		}
		if i < skip {
			continue
		}
		ms := float64(gw[i].Microseconds()) / 1000
		switch status[i] {
		case http.StatusOK:
			res.GW = append(res.GW, ms)
		case 0:
		default:
			res.Reject = append(res.Reject, ms)
		}
		if spec.Direct && direct[i] > 0 {
			res.Direct = append(res.Direct, float64(direct[i].Microseconds())/1000)
		}
	}
	slices.Sort(res.GW)
	slices.Sort(res.Direct)
	slices.Sort(res.Reject)
	return res
}

// pct is the p-quantile of sorted (0 when empty).
func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

// loadChild is the running child: its upstream's URL, and how to start and finish a run.
type loadChild struct {
	Upstream string
	stdin    io.WriteCloser
	out      *bufio.Scanner
	wait     func() error
	stderr   *bytes.Buffer
}

// startLoadChild re-executes the test binary as the load generator; its upstream answers
// after delay.
func startLoadChild(b *testing.B, delay time.Duration) *loadChild {
	b.Helper()
	raiseNoFile()
	cmd := execSelf("-test.run=^TestLoadGenChild$")
	cmd.Env = append(os.Environ(), loadEnvChild+"=1", loadEnvDelay+"="+delay.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	c := &loadChild{stdin: stdin, out: bufio.NewScanner(stdout), wait: cmd.Wait, stderr: &bytes.Buffer{}}
	c.out.Buffer(nil, 64<<20)
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	c.Upstream = c.line(b, lineUpstream)
	return c
}

// line reads the child's stdout up to the line starting with prefix and returns the rest.
func (c *loadChild) line(b *testing.B, prefix string) string {
	b.Helper()
	for c.out.Scan() {
		if rest, ok := strings.CutPrefix(c.out.Text(), prefix); ok {
			return rest
		}
	}
	b.Fatalf("load generator ended before %q: %v\nstderr: %s", prefix, c.out.Err(), c.stderr)
	return ""
}

// run sends spec to the child and waits for its result.
func (c *loadChild) run(b *testing.B, spec loadSpec) loadResult {
	b.Helper()
	js, _ := json.Marshal(spec)
	if _, err := fmt.Fprintf(c.stdin, "%s%s\n", lineGo, js); err != nil {
		b.Fatal(err)
	}
	var res loadResult
	if err := json.Unmarshal([]byte(c.line(b, lineResult)), &res); err != nil {
		b.Fatal(err)
	}
	return res
}

// envInt is the integer in the environment variable name, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func execSelf(args ...string) *exec.Cmd { return exec.Command(os.Args[0], args...) }

// peakRSS is the process's peak resident set since resetPeakRSS (VmHWM), in MB.
func peakRSS() float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// resetPeakRSS starts VmHWM again from the current RSS (Linux 4.0+; elsewhere a no-op).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }
