package spec

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// A spec whose lines end with a carriage return alone (classic Mac line endings) is refused
// as such, at the first lone CR. Before, a leading comment swallowed the whole file (the
// comment ran to the first LF, and there was none), and it was reported as empty.
func TestCROnlyLineEndingsAreNamed(t *testing.T) {
	src, err := os.ReadFile("../examples/minimal/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(src, []byte("#")) {
		t.Fatal("examples/minimal/fleet.yaml no longer starts with a comment: the case this test holds is gone")
	}
	cr := bytes.ReplaceAll(src, []byte("\n"), []byte("\r"))
	_, ds := Load("fleet.yaml", cr)
	if len(ds) != 1 || ds[0].Code != "P009" || !strings.Contains(ds[0].Summary, "carriage return alone") ||
		ds[0].Subject == nil || ds[0].Subject.Start.Line != 1 || ds[0].Subject.Start.Column != bytes.IndexByte(src, '\n')+1 {
		t.Fatalf("CR line endings: %v", ds)
	}

	// A lone CR after LF lines is found on its own line.
	mixed := append(append([]byte{}, src...), []byte("# trailing\r")...)
	if _, ds := Load("fleet.yaml", mixed); len(ds) != 1 || ds[0].Subject.Start.Line != bytes.Count(src, []byte("\n"))+1 {
		t.Errorf("a lone CR on the last line: %v", ds)
	}

	// CRLF is still a line ending like LF.
	crlf := bytes.ReplaceAll(src, []byte("\n"), []byte("\r\n"))
	if _, ds := Load("fleet.yaml", crlf); ds.HasErrors() {
		t.Errorf("CRLF line endings: %v", ds)
	}
}
