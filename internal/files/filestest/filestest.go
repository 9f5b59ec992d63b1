//go:build unix

// Package filestest holds the one table of hostile files that every
// reader of a trusted file must refuse alike, and the runner that puts a
// reader through it. Tests in every module that reads a trusted file use
// it; nothing else imports it.
package filestest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/files"
)

// Reader is one function that reads a trusted file, as a test names it.
type Reader struct {
	Name string
	// Good is content the reader accepts; the table's files hold it,
	// so a refusal is for how the file is stored, never what it says.
	Good []byte
	// Max is the most bytes the reader reads.
	Max int64
	// Ext ends every file name the table makes (".yaml" for a reader
	// that picks its format by the name).
	Ext string
	// Read reads the file at path and returns the reader's error.
	Read func(path string) error
}

// Case is one hostile file: Make writes it under dir holding the reader's
// good content (or more than its Max bytes of it) and returns the path to
// hand the reader, which must refuse it with Want.
type Case struct {
	Name string
	Want files.Problem
	Make func(t *testing.T, dir string, r Reader) string
}

// Cases are the hostile files. Another account's file needs root to make
// (chown); without root the case reads a root-owned file in /etc instead,
// which is refused before its content is parsed.
var Cases = []Case{
	{"another owner", files.ProblemOwner, func(t *testing.T, dir string, r Reader) string {
		if os.Geteuid() != 0 {
			return rootOwned(t)
		}
		p := write(t, dir, "other"+r.Ext, r.Good, 0o644)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		return p
	}},
	{"group-writable", files.ProblemWritable, func(t *testing.T, dir string, r Reader) string {
		return write(t, dir, "groupw"+r.Ext, r.Good, 0o620)
	}},
	{"world-writable", files.ProblemWritable, func(t *testing.T, dir string, r Reader) string {
		return write(t, dir, "worldw"+r.Ext, r.Good, 0o602)
	}},
	{"symbolic link", files.ProblemSymlink, func(t *testing.T, dir string, r Reader) string {
		target := write(t, dir, "target"+r.Ext, r.Good, 0o600)
		link := filepath.Join(dir, "link"+r.Ext)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		return link
	}},
	{"FIFO", files.ProblemNotRegular, func(t *testing.T, dir string, r Reader) string {
		p := filepath.Join(dir, "fifo"+r.Ext)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}},
	{"directory", files.ProblemNotRegular, func(t *testing.T, dir string, r Reader) string {
		p := filepath.Join(dir, "dir"+r.Ext)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}},
	{"swapped between check and read", files.ProblemChanged, func(t *testing.T, dir string, r Reader) string {
		p := write(t, dir, "swapped"+r.Ext, r.Good, 0o600)
		evil := write(t, dir, "evil"+r.Ext, r.Good, 0o666)
		once := false
		t.Cleanup(files.SetBeforeOpenForTest(func(path string) {
			if path == p && !once {
				once = true
				if err := os.Rename(evil, p); err != nil {
					t.Error(err)
				}
			}
		}))
		return p
	}},
	{"too large", files.ProblemTooLarge, func(t *testing.T, dir string, r Reader) string {
		// Padding a reader's good content with blank space keeps it
		// well-formed JSON or lines; only its size is wrong.
		body := append(bytes.Clone(r.Good), bytes.Repeat([]byte{'\n'}, int(r.Max)+1-len(r.Good))...)
		return write(t, dir, "large"+r.Ext, body, 0o600)
	}},
}

// Refuse runs every reader over every case, and over the good file first,
// which each must accept: a reader that refuses everything proves nothing.
func Refuse(t *testing.T, readers []Reader) {
	t.Helper()
	for _, r := range readers {
		t.Run(r.Name, func(t *testing.T) {
			good := write(t, t.TempDir(), "good"+r.Ext, r.Good, 0o600)
			if err := r.Read(good); err != nil {
				t.Fatalf("refused its own good file: %v", err)
			}
			for _, c := range Cases {
				t.Run(c.Name, func(t *testing.T) {
					p := c.Make(t, t.TempDir(), r)
					err := r.Read(p)
					var ime *files.InsecureModeError
					if !errors.As(err, &ime) || !errors.Is(err, files.ErrInsecureMode) {
						t.Fatalf("read %s: %v, want an InsecureModeError (%s)", p, err, c.Want)
					}
					if ime.Problem != c.Want || ime.Path != p {
						t.Fatalf("read %s: refused %s for %s, want %s for %s", p, ime.Path, ime.Problem, p, c.Want)
					}
					if !strings.Contains(err.Error(), p) {
						t.Fatalf("the refusal %q does not name %s", err, p)
					}
				})
			}
		})
	}
}

func write(t *testing.T, dir, name string, b []byte, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

func rootOwned(t *testing.T) string {
	for _, p := range []string{"/etc/passwd", "/etc/hosts", "/etc/group"} {
		if err := files.CheckPath(p); err != nil {
			var ime *files.InsecureModeError
			if errors.As(err, &ime) && ime.Problem == files.ProblemOwner {
				return p
			}
		}
	}
	t.Skip("not root, and no file another account owns was found to read")
	return ""
}
