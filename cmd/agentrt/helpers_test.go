package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/internal/token"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/scripted"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentrt-dist-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repo is the repository's root, from this package's directory.
var repo, _ = filepath.Abs(filepath.Join("..", ".."))

var builds sync.Map // name -> *buildResult

type buildResult struct {
	once sync.Once
	err  error
	out  []byte
}

// build builds the main package in dir (relative to the repository's root)
// into the shared bin directory as name, once per test binary: the real
// binaries, as an operator builds them.
func build(t testing.TB, name, dir string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(name, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), ".")
		cmd.Dir = filepath.Join(repo, dir)
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, b.err, b.out)
	}
	return filepath.Join(binDir, name)
}

// pgDSN returns the cluster's DSN from TEST_PG_DSN (scripts/pg-test.sh
// sets it): it skips without one, saying how to get one, except under
// CI=true, where it fails.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("TEST_PG_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but TEST_PG_DSN is unset")
		}
		t.Skip("no PostgreSQL: set TEST_PG_DSN, or run `scripts/pg-test.sh run -- go test ./...`, which starts a throwaway cluster")
	}
	return dsn
}

// pgOK reports whether a cluster is named.
func pgOK() bool { return os.Getenv("TEST_PG_DSN") != "" }

// freshDSNB is freshDSN for a benchmark, on the cluster pgOK found.
func freshDSNB(b *testing.B) string { return fresh(b, os.Getenv("TEST_PG_DSN")) }

// freshDSN makes an empty schema for the test, dropped when it ends, and
// returns a DSN whose search_path names it.
func freshDSN(t *testing.T) string { return fresh(t, pgDSN(t)) }

func fresh(t testing.TB, base string) string {
	t.Helper()
	schema := "t_" + token.Hex(6)
	exec1(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() {
		onConn(base, func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			return err
		})
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// onConn runs f on a new connection to dsn and closes it.
func onConn(dsn string, f func(ctx context.Context, c *pgx.Conn) error) error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	return f(ctx, c)
}

func exec1(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	if err := onConn(dsn, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, sql, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t *testing.T, dsn, sql string) int {
	t.Helper()
	var n int
	if err := onConn(dsn, func(ctx context.Context, c *pgx.Conn) error { return c.QueryRow(ctx, sql).Scan(&n) }); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

type result struct {
	code           int
	stdout, stderr string
}

func runBin(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	stdout, stderr, code := testrig.Exec(t, bin, env, args...)
	return result{code, stdout, stderr}
}

// waitingRuns makes n runs on dsn that each wait for the approval of a
// remote send, and returns their ids.
func waitingRuns(t *testing.T, dsn string, n int) []string {
	return pgRuns(t, dsn, n, agentrt.RemoteMutation, "send", `{"to":"x"}`, "send", "send x", agentrt.RunWaiting)
}

// oneSentence fails unless text is one line ending in a full stop.
func oneSentence(t *testing.T, what, text string) {
	t.Helper()
	s := strings.TrimSpace(text)
	if s == "" || strings.Contains(s, "\n") {
		t.Errorf("%s printed %q, want one line", what, text)
	}
}

func openReadOnly(dsn string) (*postgres.Store, error) {
	return postgres.OpenExisting(context.Background(), dsn, true)
}

// finishedRun makes one completed run on dsn, with one read-only tool call.
func finishedRun(t *testing.T, dsn string) string {
	return pgRuns(t, dsn, 1, agentrt.ReadOnly, "read", `{}`, "look", "look", agentrt.RunCompleted)[0]
}

// pgRuns starts n runs on dsn with goal, each calling the one tool (name,
// with side effect side) once with args for reason and then completing,
// checks that each is want once started, and returns their ids.
func pgRuns(t *testing.T, dsn string, n int, side agentrt.SideEffect, name, args, reason, goal string, want agentrt.RunStatus) []string {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tool := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: name, Description: name, SideEffect: side, Timeout: 10 * time.Second,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{}`), Summary: "ok"}, nil
		},
	}
	var ids []string
	for i := 0; i < n; i++ {
		d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{tool}},
			Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall(name, args, reason), scripted.Complete(`{}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := d.Start(ctx, goal, agentrt.DefaultLimits())
		if err != nil || r.Status != want {
			t.Fatalf("run = %s, %v; want %s", r.Status, err, want)
		}
		ids = append(ids, r.ID)
	}
	return ids
}
