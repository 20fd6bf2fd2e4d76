package artifact

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// An output directory may be committed by a pull request from a fork, and `build --check`
// runs in that pull request's CI: a link in it could make fleetc print or delete files
// elsewhere (a checkout's .git/config, /proc/self/environ). So every access below goes
// through an os.Root opened on the directory (nothing leaves it, whatever the race), and
// fleetc refuses every symbolic link on the way (it never writes one, so one in its files is
// planted): no read, write, removal or diff follows a link.

// openDir opens dir itself for the functions below; dir must not be a link either (a
// committed `generated -> ..` would choose which directory the manifest speaks of).
func openDir(dir string) (*os.Root, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link; fleetc does not follow links in its output directory", dir)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s exists and is not a directory", dir)
	}
	return os.OpenRoot(dir)
}

// linkOnPath returns the first component of rel (slash-separated, clean) that is a
// symbolic link, or "" when none is; a component that does not exist ends the walk.
func linkOnPath(root *os.Root, rel string) (string, error) {
	parts := strings.Split(rel, "/")
	for i := range parts {
		cur := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(filepath.FromSlash(cur))
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return cur, nil
		}
	}
	return "", nil
}

// readRegular reads the regular file rel under root, refusing links and anything else.
func readRegular(root *os.Root, rel string) ([]byte, error) {
	link, err := linkOnPath(root, rel)
	if err != nil {
		return nil, err
	}
	if link != "" {
		return nil, fmt.Errorf("%s is a symbolic link; fleetc does not follow links in its output directory", filepath.Join(root.Name(), filepath.FromSlash(link)))
	}
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// fstat the file opened, not the name checked: what is read is what was checked.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Join(root.Name(), filepath.FromSlash(rel)))
	}
	return io.ReadAll(f)
}

// ReadFileIn reads the file rel (slash-separated, relative) of the output directory dir, as
// build reads what fleetc owns there: never through a link, never outside dir.
func ReadFileIn(dir, rel string) ([]byte, error) {
	if !cleanRelative(rel) {
		return nil, fmt.Errorf("%q is not a clean relative path", rel)
	}
	root, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readRegular(root, rel)
}

// WriteFileIn writes the file rel (slash-separated, relative) of the output directory dir,
// for the files written beside a build's (the emulator override, the inventory): a link on
// the way, the file's own name included, is refused rather than followed.
func WriteFileIn(dir, rel string, b []byte) error {
	if !cleanRelative(rel) {
		return fmt.Errorf("%q is not a clean relative path", rel)
	}
	root, err := openDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	link, err := linkOnPath(root, rel)
	if err != nil {
		return err
	}
	if link != "" {
		return fmt.Errorf("%s is a symbolic link; fleetc does not follow links in its output directory", filepath.Join(dir, filepath.FromSlash(link)))
	}
	return root.WriteFile(filepath.FromSlash(rel), b, 0o644)
}

// cleanRelative reports whether p is a clean, relative, slash-separated path below ".".
func cleanRelative(p string) bool {
	return p != "" && p != "." && path.Clean(p) == p && !path.IsAbs(p) && !filepath.IsAbs(p) &&
		p != ".." && !strings.HasPrefix(p, "../") && !strings.Contains(p, `\`)
}

// ReadDir loads every regular file under dir into a set, except the manifest (golden tests
// compare whole directories). A link is an error.
func ReadDir(dir string) (*Set, error) {
	root, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	s := &Set{files: map[string][]byte{}}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == Manifest {
			return err
		}
		b, err := readRegular(root, p)
		if err != nil {
			return err
		}
		s.files[p] = b
		return nil
	})
	return s, err
}

// ReadOwned loads the files the manifest of dir lists (those present), for --check. A
// directory without a manifest owns nothing yet.
func ReadOwned(dir string) (*Set, error) {
	s := &Set{files: map[string][]byte{}}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	root, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	owned, err := readManifest(root)
	if err != nil {
		return nil, err
	}
	for _, p := range owned {
		b, err := readRegular(root, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.files[p] = b
	}
	return s, nil
}

// readManifest returns the paths the manifest of root lists. Each must be a clean relative
// path with no link on it; an entry that is not is refused at its line, so a planted
// manifest cannot point fleetc's reads or removals anywhere else.
func readManifest(root *os.Root) ([]string, error) {
	name := filepath.Join(root.Name(), Manifest)
	b, err := readRegular(root, Manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		at := fmt.Sprintf("%s:%d", name, i+1)
		switch {
		case path.IsAbs(line) || filepath.IsAbs(line):
			return nil, fmt.Errorf("%s: %q is an absolute path; the manifest lists paths inside the directory", at, line)
		case !cleanRelative(line):
			return nil, fmt.Errorf("%s: %q is outside the directory or not a clean path", at, line)
		}
		link, err := linkOnPath(root, line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if link != "" {
			return nil, fmt.Errorf("%s: %q is a symbolic link; fleetc never writes one, and does not follow links in its output directory", at, link)
		}
		out = append(out, line)
	}
	return out, nil
}

// WriteDir makes dir hold the set's files. Only paths fleetc owns are touched: the set's
// files are replaced and the files the previous manifest listed but the set lacks are
// removed; everything else in dir survives (so dir as a whole cannot be swapped in one
// rename: it holds Terraform state and .terraform/).
//
// What is guaranteed: every file is first written to a staging directory inside dir, so an
// error before the last step (a file in the way, a full disk, a permission) leaves the
// previous output exactly as it was. The last step renames the staged files into place one
// by one, each rename atomic (a reader sees a file's old bytes or its new ones, never a
// mix), removes stale files, and replaces the manifest last. A process killed during that
// step leaves some files new and some old under the old manifest; `build --check` reports
// them and the next build completes the change (and removes the abandoned staging
// directory).
func WriteDir(dir string, s *Set) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	root, err := openDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	removeAbandonedStages(root)
	old, err := readManifest(root)
	if err != nil {
		return err
	}
	// Refuse up front what would make a rename fail halfway: a file where a directory must
	// go, or a directory where a file must go; and a link where a directory must go.
	for _, p := range s.Paths() {
		if err := placeable(root, p); err != nil {
			return err
		}
	}
	stagePath, err := os.MkdirTemp(dir, stagePrefix)
	if err != nil {
		return err
	}
	stage := filepath.Base(stagePath)
	defer root.RemoveAll(stage)
	for _, p := range s.Paths() {
		full := filepath.Join(stage, filepath.FromSlash(p))
		if err := root.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := root.WriteFile(full, s.files[p], 0o644); err != nil {
			return err
		}
	}
	var manifest strings.Builder
	manifest.WriteString("# Files written by fleetc build; it replaces and removes only these.\n")
	for _, p := range s.Paths() {
		manifest.WriteString(p + "\n")
	}
	if err := root.WriteFile(filepath.Join(stage, Manifest), []byte(manifest.String()), 0o644); err != nil {
		return err
	}
	// Everything is on disk: move it into place. A rename replaces a link at the
	// destination itself, never what it points to.
	for _, p := range s.Paths() {
		dst := filepath.FromSlash(p)
		if err := root.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := root.Rename(filepath.Join(stage, dst), dst); err != nil {
			return err
		}
	}
	for _, p := range old {
		if _, keep := s.files[p]; keep {
			continue
		}
		if err := root.Remove(filepath.FromSlash(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removeEmptyParents(root, path.Dir(p))
	}
	return root.Rename(filepath.Join(stage, Manifest), Manifest)
}

// stagePrefix names the staging directories WriteDir creates inside the output directory.
const stagePrefix = ".fleetc-stage-"

// removeAbandonedStages removes staging directories a killed build left behind.
func removeAbandonedStages(root *os.Root) {
	entries, _ := fs.ReadDir(root.FS(), ".")
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), stagePrefix) {
			_ = root.RemoveAll(e.Name())
		}
	}
}

// placeable reports why the file p cannot be put under root, if it cannot.
func placeable(root *os.Root, p string) error {
	parts := strings.Split(p, "/")
	for i := range parts {
		cur := strings.Join(parts[:i+1], "/")
		full := filepath.Join(root.Name(), filepath.FromSlash(cur))
		fi, err := root.Lstat(filepath.FromSlash(cur))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		switch {
		case last && fi.IsDir():
			return fmt.Errorf("cannot write %s: a directory is in the way", full)
		case !last && fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("cannot write %s: %s is a symbolic link; fleetc does not follow links in its output directory", filepath.Join(root.Name(), filepath.FromSlash(p)), full)
		case !last && !fi.IsDir():
			return fmt.Errorf("cannot write %s: %s is not a directory", filepath.Join(root.Name(), filepath.FromSlash(p)), full)
		}
	}
	return nil
}

// removeEmptyParents removes now-empty directories from d (slash-separated, relative) up
// to (not including) the root.
func removeEmptyParents(root *os.Root, d string) {
	for d != "." && d != "/" && d != "" {
		if root.Remove(filepath.FromSlash(d)) != nil {
			return
		}
		d = path.Dir(d)
	}
}
