package verifytest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// A test binary validates many configurations against the same hashicorp/aws build. Left to
// itself, every terraform run starts the provider afresh, and go-plugin gives a starting
// provider one minute to answer its handshake: on a loaded 2-core CI machine, with the
// compiler's tests at low priority, one start missed it ("timeout while waiting for plugin to
// start"). Init also hashes the 700 MB binary each time. So each test process starts the
// provider once, in its debug mode, waits for it as long as the caller's context allows, and
// every terraform run attaches to it through TF_REATTACH_PROVIDERS: the same binary answering
// the same RPCs, about half the CPU per validate.

// reattachEnv is the variable through which Terraform attaches to a running provider.
const reattachEnv = "TF_REATTACH_PROVIDERS"

// reattachLine is how a provider started with -debug announces its address on stdout.
const reattachLine = reattachEnv + "='"

// sharedProvider is one provider binary running for the rest of the test process.
type sharedProvider struct {
	ready    chan struct{} // closed once reattach or err is set
	reattach string        // the TF_REATTACH_PROVIDERS value
	pid      int
	err      error
	exited   chan struct{} // closed when the process has ended
}

var (
	sharedMu        sync.Mutex
	sharedProviders = map[string]*sharedProvider{} // by binary path
)

// reattachProvider returns the TF_REATTACH_PROVIDERS value of binary running in debug mode,
// starting it on first use (and again if it has ended).
func reattachProvider(ctx context.Context, binary string) (string, error) {
	sharedMu.Lock()
	p := sharedProviders[binary]
	if p == nil || p.ended() {
		p = startSharedProvider(binary)
		sharedProviders[binary] = p
	}
	sharedMu.Unlock()
	select {
	case <-p.ready:
		return p.reattach, p.err
	case <-ctx.Done():
		return "", fmt.Errorf("verify: waiting for %s to start: %w", filepath.Base(binary), ctx.Err())
	}
}

func (p *sharedProvider) ended() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// startSharedProvider starts binary -debug on a goroutine locked to its own OS thread, which
// never returns: killOnParentExit ties the provider's life to the thread that started it, so
// the provider ends with the test process, however that ends.
func startSharedProvider(binary string) *sharedProvider {
	p := &sharedProvider{ready: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		p.run(binary)
		select {} // keep the thread, or the kernel would kill a provider still in use
	}()
	return p
}

func (p *sharedProvider) run(binary string) {
	defer close(p.exited)
	fail := func(err error) {
		p.err = err
		close(p.ready)
	}
	// The provider's socket goes in a directory that outlives no process that holds it.
	tmp, err := ProcessTempDir("fleetc-tf-provider")
	if err != nil {
		fail(err)
		return
	}
	cmd := exec.Command(binary, "-debug")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = killOnParentExit()
	logPath := filepath.Join(tmp, "stderr.log") // unbounded on a pipe; a file is read only on failure
	logFile, err := os.Create(logPath)
	if err != nil {
		fail(fmt.Errorf("verify: %w", err))
		return
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fail(fmt.Errorf("verify: %w", err))
		return
	}
	if err := cmd.Start(); err != nil {
		fail(fmt.Errorf("verify: starting %s: %w", binary, err))
		return
	}
	p.pid = cmd.Process.Pid
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if _, v, ok := strings.Cut(sc.Text(), reattachLine); ok && p.reattach == "" {
			p.reattach = strings.TrimSuffix(v, "'")
			close(p.ready)
		}
	}
	err = cmd.Wait()
	if p.reattach == "" {
		log, _ := os.ReadFile(logPath)
		if len(log) > 4096 {
			log = log[len(log)-4096:]
		}
		fail(fmt.Errorf("verify: %s -debug ended (%v) without announcing %s: %s", binary, err, reattachEnv, bytes.TrimSpace(log)))
	}
}

// providerBinary is the executable of src at version v in an unpacked filesystem mirror, or ""
// when the mirror holds it packed (a .zip, which terraform init unpacks itself).
func providerBinary(mirror, src, v string) string {
	name := src[strings.LastIndex(src, "/")+1:]
	dir := filepath.Join(mirror, filepath.FromSlash(src), v, runtime.GOOS+"_"+runtime.GOARCH)
	found, _ := filepath.Glob(filepath.Join(dir, "terraform-provider-"+name+"*"))
	for _, f := range found {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return f
		}
	}
	return ""
}
