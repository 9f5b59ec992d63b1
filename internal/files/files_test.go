//go:build unix

package files_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/internal/files/filestest"
)

// The helpers themselves refuse the table's hostile files.
func TestReadOwned_RefusesEveryHostileFile(t *testing.T) {
	read := func(f func(string, int64) ([]byte, error)) func(string) error {
		return func(p string) error { _, err := f(p, 64); return err }
	}
	filestest.Refuse(t, []filestest.Reader{
		{Name: "ReadOwned", Good: []byte("trusted\n"), Max: 64, Read: read(files.ReadOwned)},
		{Name: "ReadSecret", Good: []byte("secret\n"), Max: 64, Read: read(files.ReadSecret)},
	})
}

// fileIn writes data, mode 0600, to a new file name in a fresh temporary
// directory, and returns the directory and the file's path.
func fileIn(t *testing.T, name, data string) (dir, p string) {
	t.Helper()
	dir = t.TempDir()
	p = filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, p
}

// A secret others can read is refused; a trusted file others can read
// is not, since only writing it decides anything.
func TestReadSecret_RefusesAFileOthersCanRead(t *testing.T) {
	_, p := fileIn(t, "token", "s")
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	var ime *files.InsecureModeError
	if _, err := files.ReadSecret(p, 8); !errors.As(err, &ime) || ime.Problem != files.ProblemReadable {
		t.Fatalf("ReadSecret of a 0644 file = %v, want ProblemReadable", err)
	}
	if b, err := files.ReadOwned(p, 8); err != nil || string(b) != "s" {
		t.Fatalf("ReadOwned of a 0644 file = %q, %v", b, err)
	}
}

// A missing file passes CheckPrivate only when the caller may create it;
// a file group can write is refused either way.
func TestCheckPrivate_MissingFilePassesOnlyWhenAllowed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "runs.db")
	if err := files.CheckPrivate(p, true); err != nil {
		t.Fatalf("a missing file the caller may create: %v", err)
	}
	if err := files.CheckPrivate(p, false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file that must exist: %v", err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o620); err != nil {
		t.Fatal(err)
	}
	var ime *files.InsecureModeError
	if err := files.CheckPrivate(p, true); !errors.As(err, &ime) {
		t.Fatalf("a file its group can write: %v", err)
	}
}

// WriteAtomic syncs the new file before it renames it over the old one,
// then syncs the directory, and leaves the mode it was asked for.
func TestWriteAtomic_SyncsBeforeRenameAndSetsTheMode(t *testing.T) {
	dir, p := fileIn(t, "pin.json", "old")
	var steps []files.Step
	defer files.ObserveForTest(func(s files.Step, _ string) { steps = append(steps, s) })()
	if err := files.WriteAtomic(p, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	if want := []files.Step{files.StepCreate, files.StepSync, files.StepRename, files.StepSyncDir}; !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	b, err := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if err != nil || string(b) != "new" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("after WriteAtomic: %q %v mode %v", b, err, fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".pin.json.tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A write the check refuses leaves the old file and no temporary file.
func TestWriteAtomicChecked_RefusedWriteLeavesTheOldFile(t *testing.T) {
	dir, p := fileIn(t, "config.json", "old")
	bad := errors.New("would be refused")
	err := files.WriteAtomicChecked(p, []byte("new"), 0o600, func(tmp string) error {
		if b, err := os.ReadFile(tmp); err != nil || string(b) != "new" {
			t.Errorf("check saw %q, %v", b, err)
		}
		return bad
	})
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("the refused write changed the file to %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left %d entries in the directory", len(ents))
	}
}

// WriteNew syncs the new file before it takes the target's name, never
// replaces a file already there (not even through a link), and leaves no
// temporary file either way.
func TestWriteNew_NeverReplacesAndSyncsBeforeTheName(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	var steps []files.Step
	restore := files.ObserveForTest(func(s files.Step, _ string) { steps = append(steps, s) })
	err := files.WriteNew(p, []byte("first"), 0o600)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if want := []files.Step{files.StepCreate, files.StepSync, files.StepLink, files.StepSyncDir}; !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after WriteNew: %v %v", fi, err)
	}
	if err := files.WriteNew(p, []byte("second"), 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("WriteNew over an existing file = %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Fatalf("the refused write changed the file to %q", b)
	}
	link := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), link); err != nil {
		t.Fatal(err)
	}
	if err := files.WriteNew(link, []byte("x"), 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("WriteNew over a dangling link = %v, want ErrExist", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("WriteNew wrote through the link: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("left %d entries in the directory, want the key and the link", len(ents))
	}
}
