package artifact

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A pull request may commit links into the output directory and name them in its
// manifest; `build --check` runs on it in CI. These tests plant each link the security
// review used and check that fleetc reads, prints and removes nothing through it.

// secretOutside is a file outside the output directory holding a value nobody may print.
func secretOutside(t *testing.T) (dir, file, value string) {
	t.Helper()
	base := t.TempDir()
	value = "s3cr3t-token-value"
	file = filepath.Join(base, "secret")
	if err := os.WriteFile(file, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(base, "out")
	if err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v1"})); err != nil {
		t.Fatal(err)
	}
	return dir, file, value
}

// manifestWith appends lines to dir's manifest; it returns the line number of the first.
func manifestWith(t *testing.T, dir string, lines ...string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, Manifest))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Count(string(b), "\n") + 1
	b = append(b, strings.Join(lines, "\n")+"\n"...)
	if err := os.WriteFile(filepath.Join(dir, Manifest), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return first
}

func TestReadOwnedRefusesLinks(t *testing.T) {
	for name, target := range map[string]func(secret string) string{
		"absolute": func(secret string) string { return secret },
		"relative": func(string) string { return "../secret" },
		"environ":  func(string) string { return "/proc/self/environ" },
		"dangling": func(string) string { return "../nowhere" },
	} {
		t.Run(name, func(t *testing.T) {
			dir, secret, value := secretOutside(t)
			if err := os.Symlink(target(secret), filepath.Join(dir, "x")); err != nil {
				t.Fatal(err)
			}
			line := manifestWith(t, dir, "x")
			s, err := ReadOwned(dir)
			if err == nil {
				b, _ := s.Get("x")
				t.Fatalf("read the link (%d bytes)", len(b))
			}
			if strings.Contains(err.Error(), value) {
				t.Error("the error carries the linked file's content")
			}
			want := filepath.Join(dir, Manifest) + ":" + strconv.Itoa(line) + `: "x" is a symbolic link`
			if !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want it to name %s", err, want)
			}
		})
	}
}

// A linked directory on the path of an entry is refused at the entry's line too.
func TestReadOwnedRefusesLinkedDirectories(t *testing.T) {
	dir, secret, value := secretOutside(t)
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	line := manifestWith(t, dir, "d/secret")
	_, err := ReadOwned(dir)
	if err == nil || strings.Contains(err.Error(), value) || !strings.Contains(err.Error(), ":"+strconv.Itoa(line)+`: "d" is a symbolic link`) {
		t.Fatalf("err = %v", err)
	}
}

// The manifest itself, and the directory, may be links too.
func TestReadOwnedRefusesALinkedManifestOrDirectory(t *testing.T) {
	dir, secret, _ := secretOutside(t)
	os.Remove(filepath.Join(dir, Manifest))
	os.WriteFile(secret, []byte("terraform/main.tf\n"), 0o600)
	if err := os.Symlink(secret, filepath.Join(dir, Manifest)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOwned(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("linked manifest: err = %v", err)
	}
	linked := dir + "-link"
	if err := os.Symlink(dir, linked); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOwned(linked); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("linked directory: err = %v", err)
	}
	if err := WriteDir(linked, set(t, map[string]string{"a": "b"})); err == nil {
		t.Error("WriteDir wrote through a linked directory")
	}
}

// A plain build removes the files its previous manifest listed: through a linked directory
// that was a file of someone else's.
func TestWriteDirRemovesNothingThroughALink(t *testing.T) {
	dir, secret, value := secretOutside(t)
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	line := manifestWith(t, dir, "d/secret")
	err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v2"}))
	if err == nil || !strings.Contains(err.Error(), ":"+strconv.Itoa(line)+`: "d" is a symbolic link`) {
		t.Errorf("err = %v", err)
	}
	if got := read(t, secret); got != value {
		t.Errorf("the file behind the link is now %q", got)
	}
	if got := read(t, filepath.Join(dir, "terraform/main.tf")); got != "v1" {
		t.Errorf("a refused build changed main.tf to %q", got)
	}
}

// A link where a directory of a generated file must go would take the write elsewhere.
func TestWriteDirWritesNothingThroughALink(t *testing.T) {
	dir, secret, _ := secretOutside(t)
	os.RemoveAll(filepath.Join(dir, "runtime"))
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(dir, "runtime")); err != nil {
		t.Fatal(err)
	}
	err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v2", "runtime/secret": "overwritten"}))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("err = %v", err)
	}
	if got := read(t, secret); got == "overwritten" {
		t.Error("wrote through the link")
	}
}

// A generated file where a link lies replaces the link, never what it points to.
func TestWriteDirReplacesALinkItself(t *testing.T) {
	dir, secret, value := secretOutside(t)
	if err := os.Symlink(secret, filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, set(t, map[string]string{"terraform/main.tf": "v1", "a.json": "{}"})); err != nil {
		t.Fatal(err)
	}
	if got := read(t, secret); got != value {
		t.Errorf("the linked file is now %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "a.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a.json: %v, %v", fi, err)
	}
}

func TestManifestEntriesAreRefusedAtTheirLine(t *testing.T) {
	for _, entry := range []string{"/etc/passwd", "../secret", "a/../../secret", "..", "a//b", `..\secret`} {
		dir, _, _ := secretOutside(t)
		line := manifestWith(t, dir, "# comment", entry)
		at := regexp.QuoteMeta(filepath.Join(dir, Manifest)+":"+strconv.Itoa(line+1)+": ") + `.*(absolute|outside)`
		for op, err := range map[string]error{
			"ReadOwned": func() error { _, err := ReadOwned(dir); return err }(),
			"WriteDir":  WriteDir(dir, set(t, map[string]string{"a": "b"})),
		} {
			if err == nil || !regexp.MustCompile(at).MatchString(err.Error()) {
				t.Errorf("%s with %q: err = %v, want %s", op, entry, err, at)
			}
		}
	}
}

func TestReadDirRefusesLinks(t *testing.T) {
	dir, secret, _ := secretOutside(t)
	if err := os.Symlink(secret, filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("err = %v", err)
	}
}

func TestReadFileInRefusesLinks(t *testing.T) {
	dir, secret, _ := secretOutside(t)
	if err := os.Symlink(secret, filepath.Join(dir, "terraform", "x.tf")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFileIn(dir, "terraform/x.tf"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("err = %v", err)
	}
	if b, err := ReadFileIn(dir, "terraform/main.tf"); err != nil || string(b) != "v1" {
		t.Errorf("main.tf = %q, %v", b, err)
	}
}

func TestWriteFileInRefusesLinks(t *testing.T) {
	dir, secret, value := secretOutside(t)
	if err := os.Symlink(secret, filepath.Join(dir, "terraform", "override.tf")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileIn(dir, "terraform/override.tf", []byte("x")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("err = %v", err)
	}
	if got := read(t, secret); got != value {
		t.Errorf("wrote through the link: %q", got)
	}
	if err := WriteFileIn(dir, "terraform/new.tf", []byte("x")); err != nil || read(t, filepath.Join(dir, "terraform/new.tf")) != "x" {
		t.Errorf("an ordinary file: %v", err)
	}
}
