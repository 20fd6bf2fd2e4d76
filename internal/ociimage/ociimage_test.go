package ociimage

import "testing"

// The image names --base and --worker take, as skopeo spells the local ones.
func TestParseSource(t *testing.T) {
	for in, want := range map[string]Source{
		"scratch":                        {Kind: FromScratch},
		"oci:out/fw-oci":                 {Kind: FromLayout, Ref: "out/fw-oci"},
		"tar:python.tar":                 {Kind: FromTarball, Ref: "python.tar"},
		"python:3.13-slim":               {Kind: FromRegistry, Ref: "python:3.13-slim"},
		"127.0.0.1:5000/hello-greeter:1": {Kind: FromRegistry, Ref: "127.0.0.1:5000/hello-greeter:1"},
	} {
		got, err := ParseSource(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseSource(%q) = %+v (%q), %v; want %+v", in, got, got.String(), err, want)
		}
	}
	if _, err := ParseSource("Not A Ref!"); err == nil {
		t.Error("an invalid reference was taken as a registry image")
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 14_912_345: "14.9 MB", 2_500_000_000: "2.5 GB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// A layer entry is a path in the image: one climbing out of its root ("../x", as a relative
// path mapping joins to) is refused, not written into the tar for an unpacker to follow.
func TestLayerRefusesPathsOutOfTheImage(t *testing.T) {
	for _, name := range []string{"", "/", ".", "..", "../etc/passwd", "app/../../x"} {
		if _, err := Layer([]File{{Name: name, Mode: 0o644, Body: []byte("x")}}); err == nil {
			t.Errorf("Layer took the entry %q", name)
		}
	}
	if _, err := Layer([]File{{Name: "/app/../srv/x", Mode: 0o644, Body: []byte("x")}}); err != nil {
		t.Errorf("an absolute path that stays in the image: %v", err)
	}
}
