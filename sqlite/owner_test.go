package sqlite_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

// nobody is the account a test gives a file to, or runs a child as.
const nobody = 65534

// A database or a sidecar another account owns is refused by every open,
// in one sentence naming both accounts, and left as it was. Whoever owns
// the file can forge any approval in it, so even root, which could write
// it, does not open it. A second part runs a child as another account,
// which may read the root-owned file, and checks that it refuses to.
func TestStore_RefusesADatabaseAnotherAccountOwns(t *testing.T) {
	if p := os.Getenv("AGENTRT_CHILD_FOREIGN_DB"); p != "" {
		st, err := sqlite.OpenExisting(p, true)
		if err == nil {
			st.Close()
			fmt.Println("opened")
			os.Exit(0)
		}
		var oe *agentrt.InsecureModeError
		if errors.As(err, &oe) && oe.Problem == agentrt.FileOwner && errors.Is(err, agentrt.ErrInsecureMode) {
			fmt.Printf("refused by owner %d user %d: %v\n", oe.Owner, oe.User, err)
			os.Exit(0)
		}
		fmt.Printf("other error: %v\n", err)
		os.Exit(0)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can give a file to another account or run a child as one")
	}
	for _, target := range []string{"", "-wal"} {
		t.Run("file"+target, func(t *testing.T) {
			p, f := closedStoreFile(t, target)
			if err := os.Chown(f, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f, 0o644); err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, p)
			sideBefore := stateOf(t, f)
			for name, open := range opens(p) {
				st, err := open()
				if err == nil {
					st.Close()
					t.Fatalf("%s opened a file user %d owns", name, nobody)
				}
				var oe *agentrt.InsecureModeError
				if !errors.Is(err, agentrt.ErrInsecureMode) || !errors.As(err, &oe) || oe.Problem != agentrt.FileOwner || oe.Path != f || oe.Owner != nobody || oe.User != 0 {
					t.Fatalf("%s: %v, want an owner refusal naming %s, user %d and user 0", name, err, f, nobody)
				}
				want := fmt.Sprintf("agentrt: %s is owned by user %d, not by you (user 0): ", f, nobody)
				if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, ". ") {
					t.Fatalf("%s: %q is not one sentence starting %q", name, msg, want)
				}
				if after := stateOf(t, p); after != before {
					t.Fatalf("%s changed the refused database:\nbefore %+v\nafter  %+v", name, before, after)
				}
				if after := stateOf(t, f); after != sideBefore {
					t.Fatalf("%s changed the refused file:\nbefore %+v\nafter  %+v", name, sideBefore, after)
				}
			}
		})
	}
	t.Run("child as another account", func(t *testing.T) {
		// The child must reach the database and its own binary: both go in
		// a directory others may enter but not write.
		dir := t.TempDir()
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		bin := filepath.Join(dir, "sqlite.test")
		copyFile(t, os.Args[0], bin, 0o755)
		p := filepath.Join(dir, "runs.db")
		s, err := sqlite.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		writeSomething(t, s)
		s.Close()
		if err := os.Chmod(p, 0o644); err != nil { // the child may read it
			t.Fatal(err)
		}
		before := stateOf(t, p)
		cmd := exec.Command(bin, "-test.run", "^TestStore_RefusesADatabaseAnotherAccountOwns$")
		cmd.Env = append(os.Environ(), "AGENTRT_CHILD_FOREIGN_DB="+p)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		want := fmt.Sprintf("refused by owner 0 user %d: agentrt: %s is owned by user 0, not by you (user %d): ", nobody, p, nobody)
		if !strings.Contains(string(out), want) {
			t.Fatalf("the child, user %d, did not refuse a database root owns:\n%s", nobody, out)
		}
		if after := stateOf(t, p); after != before {
			t.Fatalf("the child changed the database:\nbefore %+v\nafter  %+v", before, after)
		}
	})
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
