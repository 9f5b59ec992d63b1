//go:build unix

package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/notify"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/sqlite"
)

const childEnv = "AGENTRT_NOTIFY_KILL_CHILD"

// killChild is the notifier process the test kills.
func killChild() {
	st, err := sqlite.OpenExisting(os.Getenv(childEnv+"_DB"), true)
	if err != nil {
		os.Exit(3)
	}
	n, err := notify.New(notify.Config{Store: st, Cursor: export.FileCursor{Path: os.Getenv(childEnv + "_CURSOR")},
		Targets: []notify.Target{{URL: os.Getenv(childEnv + "_URL"), Secret: secret}}, Interval: time.Millisecond})
	if err != nil {
		os.Exit(4)
	}
	n.Run(context.Background())
	os.Exit(5)
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		killChild()
	}
	os.Exit(m.Run())
}

// A notifier process killed with SIGKILL while a delivery is in flight
// has not moved its cursor past that notification; the next Run sends it
// again, and every notification has been received at least once.
func TestNotifier_AtLeastOnceAfterAHardKill(t *testing.T) {
	f := fixture.New(t)
	for _, id := range []string{"run-1", "run-2", "run-3"} {
		f.Start(t, id, fixture.Send(`{"to":"`+id+`"}`))
	}
	var mu sync.Mutex
	received := map[string]int{} // run id -> deliveries answered 200
	blocked := make(chan string, 1)
	held := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n notify.Notification
		json.Unmarshal(body, &n)
		mu.Lock()
		if n.RunID == "run-3" && !held {
			held = true
			mu.Unlock()
			blocked <- n.ID
			<-r.Context().Done() // hold the child's delivery until it dies
			return
		}
		received[n.RunID]++
		mu.Unlock()
	}))
	defer srv.Close()
	cursor := filepath.Join(t.TempDir(), "cursor")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childEnv+"_DB="+f.Path, childEnv+"_CURSOR="+cursor, childEnv+"_URL="+srv.URL)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id := <-blocked
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	third, _ := strconv.ParseInt(id, 10, 64)
	saved, err := export.FileCursor{Path: cursor}.Load()
	if err != nil || saved >= third {
		t.Fatalf("the killed notifier's cursor is %d, %v; it must be before the unanswered %d", saved, err, third)
	}
	mu.Lock()
	if received["run-3"] != 0 {
		t.Fatal("run-3's notification was answered before the kill")
	}
	mu.Unlock()

	r := newRunner(t, f, notify.Target{URL: srv.URL, Secret: secret})
	r.cfg.Cursor = export.FileCursor{Path: cursor}
	r.untilIdle()
	mu.Lock()
	defer mu.Unlock()
	for _, run := range []string{"run-1", "run-2", "run-3"} {
		if received[run] < 1 {
			t.Fatalf("%s was never delivered: %v", run, received)
		}
	}
}
