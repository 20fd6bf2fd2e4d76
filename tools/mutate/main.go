// Command mutate measures how many small semantic changes to a package its own tests catch.
//
// It parses every non-test Go file of one package, lists the mutation sites (a comparison
// flipped at its boundary or negated, && and || swapped, + and - swapped, an integer
// literal moved by one, a ! dropped), and for each selected mutant runs the package's tests
// from a test binary built by `go test -c -overlay`, so the source tree is never written and
// runs can overlap (the package's other files, tests included, are read from the tree at each
// build: run a sample from a snapshot while editing its tests). A mutant is killed when the
// tests fail, survives when they pass, is invalid when it does not compile and timed out when
// its tests outlive -timeout. The score is
// killed / (killed + survived): a timeout is reported on its own with its position, never
// counted as a kill, because on a loaded machine a slow but passing run would otherwise inflate
// the score (re-test it with -at and a longer -timeout). Survivors are printed with their
// position so a reader can judge which are equivalent (no test could tell them apart).
// Before the mutants, the unchanged package's tests run once (the baseline): a failing
// baseline (a missing emulator, a flaky test) would make every mutant "killed", so it stops
// the run, and its duration tells what -timeout to give.
//
//	go run ./tools/mutate -pkg ./compiler/check [-n 60] [-seed 1] [-p 1] [-timeout 3m] [-run REGEXP] [-skip REGEXP] [-lock FILE] [-at FILE:LINE[:COL],...] [-list]
//
// -n samples that many sites (0: all) with a fixed seed, so two runs on the same tree measure
// the same mutants; -at re-tests only the sites on the named lines, or at the named
// line:column (a sample's survivors, as the report prints them).
// The machine is shared: -p defaults to 1. -lock takes an exclusive flock on FILE around each
// mutant's test binary run (not its build, nor the whole run), so a package whose tests need
// the shared AWS emulator waits its turn per mutant instead of holding it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// site is one mutation: in file, the node at pos is changed by apply (and changed back by undo).
type site struct {
	file  string
	pos   token.Position
	desc  string
	apply func()
	undo  func()
}

var swaps = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL, token.LAND: token.LOR, token.LOR: token.LAND,
	token.ADD: token.SUB, token.SUB: token.ADD,
}

func main() {
	pkg := flag.String("pkg", "", "package directory, e.g. ./compiler/check")
	n := flag.Int("n", 0, "sample this many mutants (0: all)")
	seed := flag.Uint64("seed", 1, "sampling seed")
	par := flag.Int("p", 1, "mutants tested at once")
	timeout := flag.Duration("timeout", 3*time.Minute, "per mutant's test run; a timeout is reported apart, not as killed")
	run := flag.String("run", "", "go test -run filter (default: all tests)")
	skip := flag.String("skip", "", "go test -skip filter: tests left out (a slow one whose mutants the rest kill)")
	at := flag.String("at", "", "only the sites at these comma-separated file:line or file:line:column places (e.g. compat.go:962), to re-test survivors")
	lock := flag.String("lock", "", "flock this file around each mutant's test run (e.g. /tmp/kumo.lock)")
	list := flag.Bool("list", false, "print the selected sites and stop (to choose -run or -timeout before a long run)")
	flag.Parse()
	if *pkg == "" {
		fmt.Fprintln(os.Stderr, "mutate: -pkg is required")
		os.Exit(2)
	}
	fset, byName, sites := load(*pkg)
	total := len(sites)
	sites = choose(sites, *at, *n, *seed)
	if *list {
		for _, s := range sites {
			fmt.Printf("%s:%d:%d: %s\n", s.pos.Filename, s.pos.Line, s.pos.Column, s.desc)
		}
		return
	}
	tmp, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)

	if err := baseline(*pkg, tmp, *run, *skip, *lock, *timeout); err != nil {
		fail(err)
	}
	start := time.Now()
	results := testAll(fset, byName, sites, tmp, *par, func(overlay string) string {
		return test(*pkg, overlay, *run, *skip, *lock, *timeout)
	})
	report(*pkg, sites, total, results, time.Since(start), *timeout)
}

// load parses the package's non-test files and lists their mutation sites, in file order.
func load(pkg string) (*token.FileSet, map[string]*ast.File, []site) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
	if err != nil {
		fail(err)
	}
	sort.Strings(files)
	byName := map[string]*ast.File{}
	var sites []site
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			fail(err)
		}
		byName[name] = f
		sites = append(sites, collect(fset, name, f)...)
	}
	return fset, byName, sites
}

// choose keeps the sites at the -at places, then a seeded sample of n of them (0: all),
// back in file order.
func choose(sites []site, at string, n int, seed uint64) []site {
	if at != "" {
		sites = slices.DeleteFunc(sites, func(s site) bool {
			for _, p := range strings.Split(at, ",") {
				line := fmt.Sprintf("%s:%d", s.pos.Filename, s.pos.Line)
				if strings.HasSuffix(line, p) || strings.HasSuffix(fmt.Sprintf("%s:%d", line, s.pos.Column), p) {
					return false
				}
			}
			return true
		})
	}
	if n > 0 && n < len(sites) {
		r := rand.New(rand.NewPCG(seed, 0))
		r.Shuffle(len(sites), func(i, j int) { sites[i], sites[j] = sites[j], sites[i] })
		sites = sites[:n]
		sort.SliceStable(sites, func(i, j int) bool {
			if sites[i].file != sites[j].file {
				return sites[i].file < sites[j].file
			}
			return sites[i].pos.Offset < sites[j].pos.Offset
		})
	}
	return sites
}

// testAll renders each mutant into tmp as an overlay and tests it with try, par at once;
// results[i] is site i's outcome.
func testAll(fset *token.FileSet, byName map[string]*ast.File, sites []site, tmp string, par int, try func(overlay string) string) []string {
	// Each mutant's source is rendered under one lock (the AST is shared), then tested alone.
	var mu sync.Mutex
	results := make([]string, len(sites))
	sem := make(chan struct{}, max(par, 1))
	var wg sync.WaitGroup
	for i, s := range sites {
		mu.Lock()
		s.apply()
		var buf bytes.Buffer
		perr := printer.Fprint(&buf, fset, byName[s.file])
		s.undo()
		mu.Unlock()
		if perr != nil {
			fail(perr)
		}
		abs, _ := filepath.Abs(s.file)
		mutFile := filepath.Join(tmp, strconv.Itoa(i)+".go")
		overlay := filepath.Join(tmp, strconv.Itoa(i)+".json")
		ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: mutFile}})
		if err := os.WriteFile(mutFile, buf.Bytes(), 0o644); err != nil {
			fail(err)
		}
		if err := os.WriteFile(overlay, ov, 0o644); err != nil {
			fail(err)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = try(overlay)
			fmt.Fprintf(os.Stderr, "%3d/%d %-8s %s:%d:%d: %s\n", i+1, len(sites), results[i], s.pos.Filename, s.pos.Line, s.pos.Column, s.desc)
		}()
	}
	wg.Wait()
	return results
}

// report prints the score, the survivors and the timed-out mutants.
func report(pkg string, sites []site, total int, results []string, took, timeout time.Duration) {
	count := map[string]int{}
	var survivors, timeouts []string
	for i, r := range results {
		count[r]++
		line := fmt.Sprintf("  %s:%d:%d: %s", sites[i].pos.Filename, sites[i].pos.Line, sites[i].pos.Column, sites[i].desc)
		switch r {
		case "survived":
			survivors = append(survivors, line)
		case "timeout":
			timeouts = append(timeouts, line)
		}
	}
	valid := count["killed"] + count["survived"]
	score := 0.0
	if valid > 0 {
		score = 100 * float64(count["killed"]) / float64(valid)
	}
	fmt.Printf("%s: %d of %d sites tested; killed %d, survived %d, invalid %d, timed out %d; score %.1f %% (%s)\n",
		pkg, len(sites), total, count["killed"], count["survived"], count["invalid"], count["timeout"], score, took.Round(time.Second))
	if len(survivors) > 0 {
		fmt.Println("survivors (a test is missing, or the mutant is equivalent):")
		fmt.Println(strings.Join(survivors, "\n"))
	}
	if len(timeouts) > 0 {
		fmt.Printf("timed out after %s (not in the score; a hang or a slow run: re-test with -at and a longer -timeout):\n", timeout)
		fmt.Println(strings.Join(timeouts, "\n"))
	}
}

// baseline runs the unchanged package's tests once; they must pass, else every mutant would
// count as killed.
func baseline(pkg, tmp, run, skip, lock string, timeout time.Duration) error {
	overlay := filepath.Join(tmp, "baseline.json")
	if err := os.WriteFile(overlay, []byte(`{"Replace":{}}`), 0o644); err != nil {
		return err
	}
	start := time.Now()
	r := test(pkg, overlay, run, skip, lock, timeout)
	fmt.Fprintf(os.Stderr, "baseline  %s in %s\n", r, time.Since(start).Round(time.Second))
	if r != "survived" {
		return fmt.Errorf("the unchanged tests of %s did not pass (%s): fix them (or start the emulator) before measuring mutants", pkg, r)
	}
	return nil
}

// test builds the package's test binary over the overlay (invalid when it does not compile),
// then runs it in the package directory under lock: killed or survived.
func test(pkg, overlay, run, skip, lock string, timeout time.Duration) string {
	bin := strings.TrimSuffix(overlay, ".json") + ".test"
	defer os.Remove(bin)
	var out bytes.Buffer
	build := exec.Command("go", "test", "-c", "-o", bin, "-overlay="+overlay, pkg)
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		return "invalid"
	}
	// The binary's own deadline (10 min by default) would end a slow run as a failure, a false
	// kill: leave it beyond ours, so only -timeout ends a run, as "timeout".
	args := []string{"-test.count=1", "-test.failfast", "-test.timeout", (timeout + time.Minute).String()}
	if run != "" {
		args = append(args, "-test.run", run)
	}
	if skip != "" {
		args = append(args, "-test.skip", skip)
	}
	unlock := acquire(lock)
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = pkg
	out.Reset()
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	switch {
	case err == nil:
		return "survived"
	case ctx.Err() != nil:
		return "timeout" // a hang or a slow run on a loaded machine: not a kill until re-tested
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return "killed"
	}
	fail(err)
	return ""
}

// collect lists the mutation sites of one file.
func collect(fset *token.FileSet, name string, f *ast.File) []site {
	var out []site
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.GenDecl:
			if x.Tok == token.CONST || x.Tok == token.IMPORT {
				return false // constants are facts from the seeds; mutating them tests the seeds
			}
		case *ast.BinaryExpr:
			if to, ok := swaps[x.Op]; ok && !isString(x) {
				from := x.Op
				out = append(out, site{file: name, pos: fset.Position(x.OpPos),
					desc:  fmt.Sprintf("%s → %s", from, to),
					apply: func() { x.Op = to }, undo: func() { x.Op = from }})
			}
		case *ast.UnaryExpr:
			if x.Op == token.NOT {
				inner := x.X
				// !x becomes !!(x), which is x: the printer needs no new node in the parent.
				out = append(out, site{file: name, pos: fset.Position(x.OpPos), desc: "drop !",
					apply: func() { x.X = &ast.UnaryExpr{Op: token.NOT, X: &ast.ParenExpr{X: inner}} },
					undo:  func() { x.X = inner }})
			}
		case *ast.BasicLit:
			if x.Kind == token.INT {
				v, err := strconv.ParseInt(x.Value, 0, 64)
				if err != nil || v > 1<<20 {
					return true
				}
				old := x.Value
				nv := strconv.FormatInt(v+1, 10)
				out = append(out, site{file: name, pos: fset.Position(x.Pos()), desc: old + " → " + nv,
					apply: func() { x.Value = nv }, undo: func() { x.Value = old }})
			}
		}
		return true
	})
	return out
}

// isString guesses string concatenation (+ of a string literal), which has no - to swap to.
func isString(x *ast.BinaryExpr) bool {
	if x.Op != token.ADD {
		return false
	}
	for _, e := range []ast.Expr{x.X, x.Y} {
		if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
			return true
		}
	}
	return false
}

// acquire takes an exclusive flock on path ("" takes nothing) and returns its release.
func acquire(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o666)
	if err != nil {
		fail(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fail(err)
	}
	return func() { f.Close() } // closing the last descriptor releases the lock
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(1)
}
