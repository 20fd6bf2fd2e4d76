package verifytest

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
)

// Import paths of the binaries tests run as processes.
const (
	FleetcPkg = "github.com/fleetc/fleetc/cmd/fleetc"
	WorkerPkg = "github.com/fleetc/fleetc/cmd/fleet-worker"
)

var (
	builds   sync.Mutex
	builtDir string
	built    = map[string]*goBuild{}
)

type goBuild struct {
	pkg  string
	once sync.Once
	path string
	err  error
}

// GoBinary builds the main package pkg (an import path of this module) once per test process
// and returns the binary's path, alone in its directory so that the directory can go on PATH
// without bringing another binary along. Tests that run fleetc or fleet-worker as a process
// share the build.
func GoBinary(tb TB, pkg string) string {
	tb.Helper()
	b := buildOf(pkg)
	b.build()
	if b.err != nil {
		tb.Fatalf("%v", b.err)
	}
	return b.path
}

// Prebuild starts GoBinary's builds of pkgs in the background, from a TestMain whose tests
// would otherwise wait for them one after another; GoBinary then waits for what is left.
func Prebuild(pkgs ...string) {
	for _, pkg := range pkgs {
		go buildOf(pkg).build()
	}
}

// buildOf is pkg's one build in this process.
func buildOf(pkg string) *goBuild {
	builds.Lock()
	defer builds.Unlock()
	b := built[pkg]
	if b == nil {
		b = &goBuild{pkg: pkg}
		built[pkg] = b
	}
	return b
}

// build runs the build once; later calls wait for it.
func (b *goBuild) build() { b.once.Do(func() { b.path, b.err = goBuildOnce(b.pkg) }) }

func goBuildOnce(pkg string) (string, error) {
	builds.Lock()
	if builtDir == "" {
		dir, err := ProcessTempDir("fleetc-test-bins")
		if err != nil {
			builds.Unlock()
			return "", err
		}
		builtDir = dir
	}
	dir := filepath.Join(builtDir, path.Base(pkg))
	builds.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, path.Base(pkg))
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}
