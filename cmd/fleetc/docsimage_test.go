package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/buildinfo"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/cmd/fleetc/image"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/examples"
	"github.com/fleetc/fleetc/internal/ociimage"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// The quickstart's image commands (docs/quickstart.md, "5. The image") pull their base from
// Docker Hub and push to the ECR repository of the spec fleetc init writes; no test reaches
// either. TestDocs runs them as written all the same: for that script, HTTPS_PROXY names a
// proxy on loopback that tunnels each connection to those two hosts (and no other) to one
// OCI registry in the test process (go-containerregistry's pkg/registry, a distribution-API
// server), served over TLS with a certificate for both hosts from a test CA the commands
// trust through SSL_CERT_FILE. Nothing in fleetc is told about the test: go-containerregistry's
// transport takes the proxy from the environment, and Go's TLS its roots. The base there is
// a stand-in (standInBase), and after the script the test reads the pushed image back.
const (
	quickstartDoc = "docs/quickstart.md"
	// checkoutDir is the fleetc clone beside the quickstart's project ("../fleetc" from hello/).
	checkoutDir = "fleetc"
	// starterSpec is what `fleetc init hello` writes as fleet/fleet.yaml: its worker.image is
	// where the push goes.
	starterSpec = "cli/starter/lambda.yaml"
)

// What the quickstart's commands name: the fleet-worker image the checkout's tools/image
// writes, the class and its base.
var (
	workerImageCmd = regexp.MustCompile(`go run \./tools/image -o (\S+)`)
	classImageCmd  = regexp.MustCompile(`fleetc image build \S+ (\S+) --base (\S+)`)
)

// imageRegistry is the registry and proxy the quickstart's image commands reach.
type imageRegistry struct {
	workerOut   string // go run ./tools/image's -o
	class, base string // fleetc image build's class and --base
	tag         string // the starter spec's worker.image: where --push sends the image
	platform    v1.Platform
	hosts       []string // Docker Hub as go-containerregistry names it, and the tag's ECR
	proxy       *url.URL
	caFile      string
	transport   *http.Transport // the test's own: through the proxy, trusting the CA
	baseImage   v1.Image        // the stand-in base's image for platform
	goEnv       []string        // the go command's caches and settings for `go run`

	mu      sync.Mutex
	tunnels map[string]int // CONNECT requests by host
}

// startImageRegistry starts the registry and the proxy for the quickstart as doc (its text)
// names its commands, and puts the stand-in base there.
func startImageRegistry(t *testing.T, doc string) *imageRegistry {
	t.Helper()
	w, c := workerImageCmd.FindStringSubmatch(doc), classImageCmd.FindStringSubmatch(doc)
	if w == nil || c == nil {
		t.Fatalf("%s has no `go run ./tools/image -o DIR` or `fleetc image build FILE CLASS --base REF`: update docsimage_test.go with it", quickstartDoc)
	}
	r := &imageRegistry{workerOut: w[1], class: c[1], base: c[2], tunnels: map[string]int{}}
	r.starterTag(t)
	baseRef, err := name.ParseReference(r.base)
	if err != nil {
		t.Fatal(err)
	}
	tagRef, err := name.ParseReference(r.tag)
	if err != nil {
		t.Fatal(err)
	}
	r.hosts = []string{baseRef.Context().RegistryStr(), tagRef.Context().RegistryStr()}
	caPEM, leaf, pool := testCA(t, r.hosts)
	r.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(r.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	reg.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	reg.StartTLS()
	t.Cleanup(reg.Close)
	proxy := httptest.NewServer(r.tunnel(reg.Listener.Addr().String()))
	t.Cleanup(proxy.Close)
	r.proxy, _ = url.Parse(proxy.URL)
	r.transport = remote.DefaultTransport.(*http.Transport).Clone()
	r.transport.Proxy = http.ProxyURL(r.proxy)
	r.transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	r.pushBase(t, baseRef)
	// testscript's HOME is /no-home: go run gets this process's caches and settings.
	goVars := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOTOOLCHAIN"}
	out, err := exec.Command("go", append([]string{"env"}, goVars...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	for i, v := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		r.goEnv = append(r.goEnv, goVars[i]+"="+v)
	}
	return r
}

// starterTag reads where the quickstart's push goes, and the class's platform, from the spec
// fleetc init writes.
func (r *imageRegistry) starterTag(t *testing.T) {
	res, err := compiler.Compile(compiler.Input{Path: starterSpec, Stop: compiler.Checked})
	if err != nil || res.Fleet == nil || res.Diagnostics.HasErrors() {
		t.Fatalf("%s: %v %v", starterSpec, err, res.Diagnostics)
	}
	for _, a := range res.Fleet.Agents {
		if a.Name == r.class {
			r.tag, r.platform = a.Image, image.DefaultPlatform(a)
			return
		}
	}
	t.Fatalf("%s has no class %s, which %s builds", starterSpec, r.class, quickstartDoc)
}

// testCA is a CA (its certificate as PEM, and as a pool) and a server certificate it signed
// for hosts.
func testCA(t *testing.T, hosts []string) ([]byte, tls.Certificate, *x509.CertPool) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fleetc TestDocs CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}, pool
}

// tunnel is the proxy: a CONNECT to one of the hosts on 443 is tunnelled to the registry at
// addr; anything else is refused, so a command that reaches for another host fails.
func (r *imageRegistry) tunnel(addr string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		host, port, _ := net.SplitHostPort(req.Host)
		if req.Method != http.MethodConnect || port != "443" || !slices.Contains(r.hosts, host) {
			http.Error(w, fmt.Sprintf("this test proxy tunnels only to %s on port 443, not %s %s", strings.Join(r.hosts, ", "), req.Method, req.Host), http.StatusForbidden)
			return
		}
		up, err := net.Dial("tcp", addr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer up.Close()
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		r.mu.Lock()
		r.tunnels[host]++
		r.mu.Unlock()
		if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		go func() {
			_, _ = io.Copy(up, buf) // buf: what the client sent after its CONNECT, then the rest
			up.Close()
		}()
		_, _ = io.Copy(conn, up)
	}
}

// pushBase puts the stand-in base at ref, through the proxy as the commands reach it.
func (r *imageRegistry) pushBase(t *testing.T, ref name.Reference) {
	t.Helper()
	idx, err := standInBase()
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithTransport(r.transport)); err != nil {
		t.Fatalf("push the stand-in base %s: %v", ref, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform.Satisfies(r.platform) {
			if r.baseImage, err = idx.Image(d.Digest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r.baseImage == nil {
		t.Fatalf("the stand-in base has no %s image", ociimage.Platform(r.platform))
	}
	r.mu.Lock()
	clear(r.tunnels) // the tunnels verify counts are the commands', not this push's
	r.mu.Unlock()
}

// standInBase is what the registry serves as the quickstart's base (python:3.13-slim): not
// Python, but a few small files in three layers per platform, in an OCI index with an image
// for linux/amd64 and linux/arm64 as Docker Hub serves the official images, with such an
// image's environment and CMD. fleetc image build reads a base's layers and config only, and
// never runs it, so this is enough to go the way a real base goes.
func standInBase() (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		p := v1.Platform{OS: "linux", Architecture: arch}
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		for _, f := range []ociimage.File{
			{Name: "/etc/os-release", Mode: 0o644, Body: []byte("PRETTY_NAME=\"fleetc TestDocs stand-in base (" + ociimage.Platform(p) + ")\"\n")},
			{Name: "/usr/local/bin/python3", Mode: 0o755, Body: []byte("#!/bin/sh\necho 'a stand-in: there is no Python in this test image' >&2\nexit 1\n")},
			{Name: "/usr/local/lib/python3.13/README", Mode: 0o644, Body: []byte("stand-in\n")},
		} {
			l, err := ociimage.Layer([]ociimage.File{f})
			if err != nil {
				return nil, err
			}
			if img, err = mutate.AppendLayers(img, l); err != nil {
				return nil, err
			}
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = p.OS, p.Architecture
		cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
		cf.Config.Cmd = []string{"python3"}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

// docOutputsKey keys, in a script's testscript values, the outputs its commands printed
// (cmpDoc records them), for checks after the script.
type docOutputsKey struct{}

// setup prepares the quickstart's script: the environment its image commands need, the
// fleetc checkout beside its project, and the check of the pushed image after it.
func (r *imageRegistry) setup(e *testscript.Env) error {
	for _, kv := range r.goEnv {
		k, v, _ := strings.Cut(kv, "=")
		e.Setenv(k, v)
	}
	e.Setenv("GOPROXY", "off") // the module cache has what go run needs; nothing is downloaded
	e.Setenv("HTTPS_PROXY", r.proxy.String())
	e.Setenv("SSL_CERT_FILE", r.caFile)
	if err := checkoutBeside(filepath.Join(e.WorkDir, checkoutDir)); err != nil {
		return err
	}
	outputs := new([]string)
	e.Values[docOutputsKey{}] = outputs
	e.Defer(func() {
		if t := e.T().(testing.TB); !t.Failed() {
			r.verify(t, filepath.Join(e.WorkDir, checkoutDir), *outputs)
		}
	})
	return nil
}

// checkoutBeside makes dir this checkout as a clone would be: a link to each entry of the
// checkout's root, but for bin/, which is dir's own so that what the commands write there
// stays in the script's directory, and .git (go build would stamp a tree of links as
// modified).
func checkoutBeside(dir string) error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	for _, de := range entries {
		if de.Name() == "bin" || de.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, de.Name()), filepath.Join(dir, de.Name())); err != nil {
			return err
		}
	}
	return nil
}

// verify reads back what the quickstart pushed: the image at the spec's tag is the one whose
// digest fleetc image build printed, for the class's platform, on the base's layers, with
// fleet-worker (the one go run ./tools/image wrote into checkout) at the entrypoint and the
// project's handler at /app. A push that printed its lines and sent nothing fails here.
func (r *imageRegistry) verify(t testing.TB, checkout string, outputs []string) {
	for _, h := range r.hosts {
		r.mu.Lock()
		n := r.tunnels[h]
		r.mu.Unlock()
		if n == 0 {
			t.Errorf("no command reached %s through the proxy", h)
		}
	}
	printed := regexp.MustCompile(`(?m)^(sha256:[0-9a-f]{64}) ` + regexp.QuoteMeta(ociimage.Platform(r.platform)+" "+r.tag) + `$`)
	var digest string
	for _, out := range outputs {
		if m := printed.FindStringSubmatch(out); m != nil {
			digest = m[1]
		}
	}
	ref, err := name.ParseReference(r.tag)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, remote.WithTransport(r.transport))
	if err != nil {
		t.Fatalf("%s is not in the registry: %v", r.tag, err)
	}
	if digest == "" || desc.Digest.String() != digest {
		t.Errorf("the registry has %s at %s; fleetc image build printed %q", desc.Digest, r.tag, digest)
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	r.verifyConfig(t, img)
	r.verifyLayers(t, img)
	r.verifyFiles(t, img, checkout)
}

func (r *imageRegistry) verifyConfig(t testing.TB, img v1.Image) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := (v1.Platform{OS: cf.OS, Architecture: cf.Architecture}); !got.Equals(r.platform) {
		t.Errorf("pushed image is for %s, want %s", ociimage.Platform(got), ociimage.Platform(r.platform))
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{ociimage.Entrypoint}) || cf.Config.User != ociimage.User {
		t.Errorf("pushed image: entrypoint %q, user %q; want [%s], %s", cf.Config.Entrypoint, cf.Config.User, ociimage.Entrypoint, ociimage.User)
	}
}

// verifyLayers: the pushed image starts with the base's layers (the stand-in pulled from the
// base's registry), then fleet-worker's and the handler's.
func (r *imageRegistry) verifyLayers(t testing.TB, img v1.Image) {
	digests := func(img v1.Image) []v1.Hash {
		ls, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		var ds []v1.Hash
		for _, l := range ls {
			d, err := l.Digest()
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		return ds
	}
	base, got := digests(r.baseImage), digests(img)
	if len(got) != len(base)+2 || !slices.Equal(got[:len(base)], base) {
		t.Errorf("pushed image's layers %v; want the base's %v and two more", got, base)
	}
}

// verifyFiles: fleet-worker is the one tools/image wrote (its -trimpath build records no
// -ldflags, so the version is not checked here), and /app/handler.py is fleetc init's.
func (r *imageRegistry) verifyFiles(t testing.TB, img v1.Image, checkout string) {
	worker, err := ociimage.Source{Kind: ociimage.FromLayout, Ref: filepath.Join(checkout, r.workerOut)}.Image(context.Background(), r.platform)
	if err != nil {
		t.Fatalf("the fleet-worker image go run ./tools/image wrote: %v", err)
	}
	want, err := ociimage.ReadFile(worker, ociimage.Entrypoint)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := ociimage.ReadFile(img, ociimage.Entrypoint)
	if len(exe) == 0 || !bytes.Equal(exe, want) {
		t.Errorf("pushed image's %s (%d bytes) is not the fleet-worker of %s (%d bytes)", ociimage.Entrypoint, len(exe), r.workerOut, len(want))
	} else if bi, err := buildinfo.Read(bytes.NewReader(exe)); err != nil || bi.Path != verifytest.WorkerPkg {
		t.Errorf("pushed image's %s is not fleet-worker: %v %v", ociimage.Entrypoint, bi, err)
	}
	handler, err := examples.PythonImage.ReadFile("images/python/handler.py")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ociimage.ReadFile(img, path.Join(dev.ImageHandlerDir, "handler.py")); !bytes.Equal(got, handler) {
		t.Errorf("pushed image's %s/handler.py is %q, want fleetc init's handler", dev.ImageHandlerDir, got)
	}
}
