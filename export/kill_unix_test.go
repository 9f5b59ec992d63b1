//go:build unix

package export_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/sqlite"
)

const (
	childEnv   = "AGENTRT_EXPORT_KILL_CHILD"
	childPage  = 10
	childBlock = 35 // the child stops, mid-page, after writing this seq
)

// killChild is the follower process the test kills: it writes each seq it
// delivers to stdout and, after childBlock, waits on stdin, which the
// parent never writes, so the kill lands inside a page.
func killChild(db, cursor string) {
	st, err := sqlite.OpenExisting(db, true)
	if err != nil {
		os.Exit(3)
	}
	f := export.Follower{Store: st, Cursor: export.FileCursor{Path: cursor}, PageSize: childPage}
	f.Follow(context.Background(), func(e agentrt.Event) error {
		os.Stdout.WriteString(strconv.FormatInt(e.Seq, 10) + "\n")
		if e.Seq == childBlock {
			io.Copy(io.Discard, os.Stdin)
		}
		return nil
	})
	os.Exit(4)
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		killChild(os.Getenv(childEnv+"_DB"), os.Getenv(childEnv+"_CURSOR"))
	}
	code := m.Run()
	if benchDB.path != "" {
		os.RemoveAll(filepath.Dir(benchDB.path))
	}
	os.Exit(code)
}

// A follower process killed with SIGKILL in the middle of a page loses
// nothing: the next Follow from its cursor file re-delivers the part of
// that one page it had delivered, and every other event exactly once.
func TestFollower_AtLeastOnceAfterAHardKill(t *testing.T) {
	st, path := newDB(t)
	addRun(t, st, "r")
	bulk(t, st, "r", 59) // 60 events
	cursor := filepath.Join(t.TempDir(), "cursor")

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childEnv+"_DB="+path, childEnv+"_CURSOR="+cursor)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var first []int64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("child wrote %q", sc.Text())
		}
		first = append(first, n)
		if n == childBlock {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL", err)
	}
	if !equal(first, span(1, childBlock)) {
		t.Fatalf("child delivered %v before the kill", first)
	}
	cur := export.FileCursor{Path: cursor}
	saved, err := cur.Load()
	if err != nil {
		t.Fatal(err)
	}
	if saved != 30 {
		t.Fatalf("cursor after the kill = %d, want 30 (the last whole page)", saved)
	}

	var c collector
	f := export.Follower{Store: openRO(t, path), Cursor: cur, PageSize: childPage, Once: true}
	if err := f.Follow(context.Background(), c.sink); err != nil {
		t.Fatal(err)
	}
	second := c.got()
	if !equal(second, span(saved+1, 60)) {
		t.Fatalf("after the kill delivered %v, want %d..60", second, saved+1)
	}
	again := 0
	for _, s := range second {
		if s <= childBlock {
			again++
		}
	}
	if again == 0 || again > childPage {
		t.Fatalf("%d events delivered twice, want 1 to %d (at most one page)", again, childPage)
	}
}
