package main

import (
	"context"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every agentrt command, run as the real binary on a DSN of the real
// cluster, opens it: reads read (read-only, writing nothing), decisions
// decide, and the companions agentrt runs get the DSN too.
func TestCLI_EveryCommandOpensAPostgresDSN(t *testing.T) {
	bin := build(t, "agentrt", "cmd/agentrt")
	build(t, "agentrt-policy", "cmd/agentrt-policy")
	dsn := freshDSN(t)
	ids := waitingRuns(t, dsn, 3)
	events := func() int { return queryInt(t, dsn, "SELECT count(*) FROM events") }
	cursor := filepath.Join(t.TempDir(), "cursor")
	policy := filepath.Join(repo, "examples", "policy", "policy.yaml")
	before := events()
	reads := []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "backends: PostgreSQL, SQLite"},
		{[]string{"runs"}, ids[0]},
		{[]string{"-json", "runs"}, `"id":"` + ids[2] + `"`},
		{[]string{"show", ids[0]}, "WAITING_FOR_APPROVAL"},
		{[]string{"events", ids[0]}, "approval.requested"},
		{[]string{"follow", "-once", "-cursor", cursor}, "run.created"},
		{[]string{"verify"}, "intact"},
		{[]string{"approvers", "list"}, ""},
		{[]string{"recheck", "-policy", policy, ids[0]}, "run " + ids[0]},
	}
	for _, c := range reads {
		r := runBin(t, bin, nil, append([]string{"-db", dsn}, c.args...)...)
		if c.args[0] == "recheck" {
			// The example policy may decide differently (exit 1); either
			// way it read the run from the DSN.
			if r.code > 1 || !strings.Contains(r.stdout, c.want) {
				t.Errorf("agentrt %v = %d\n%s\n%s", c.args, r.code, r.stdout, r.stderr)
			}
			continue
		}
		if r.code != 0 || !strings.Contains(r.stdout, c.want) {
			t.Errorf("agentrt %v = %d, want 0 and %q\n%s\n%s", c.args, r.code, c.want, r.stdout, r.stderr)
		}
	}
	if got := events(); got != before {
		t.Fatalf("the read commands wrote: %d events, was %d", got, before)
	}
	// The same reads through AGENTRT_DB.
	if r := runBin(t, bin, []string{"AGENTRT_DB=" + dsn}, "show", ids[1]); r.code != 0 || !strings.Contains(r.stdout, ids[1]) {
		t.Errorf("AGENTRT_DB=DSN show = %d\n%s", r.code, r.stderr)
	}
	writes := []struct {
		args   []string
		run    string
		status string
	}{
		{[]string{"approve", ids[0], "-yes", "-by", "alice", "-note", "ok"}, ids[0], "approved"},
		{[]string{"reject", ids[1], "-yes", "-by", "alice", "-note", "no"}, ids[1], "rejected"},
		{[]string{"cancel", ids[2], "-by", "alice", "-note", "stop"}, ids[2], "cancelled"},
	}
	for _, c := range writes {
		r := runBin(t, bin, nil, append([]string{"-db", dsn}, c.args...)...)
		if r.code != 0 {
			t.Fatalf("agentrt %v = %d\n%s\n%s", c.args, r.code, r.stdout, r.stderr)
		}
		got := queryInt(t, dsn, "SELECT count(*) FROM approvals WHERE run_id = '"+c.run+"' AND status = '"+c.status+"'")
		if got != 1 {
			t.Errorf("after agentrt %s the approval of %s is not %s", c.args[0], c.run, c.status)
		}
	}
	if r := runBin(t, bin, nil, "-db", dsn, "approvers", "invite", "bob", "-by", "alice"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "bob") {
		t.Errorf("approvers invite = %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// resume belongs to runs agentrt demo started; it opens the DSN and says so.
	if r := runBin(t, bin, nil, "-db", dsn, "resume", "-workspace", t.TempDir(), ids[0]); r.code != 1 {
		t.Errorf("resume = %d\n%s", r.code, r.stderr)
	}
	// The demo creates a SQLite file, never touches a DSN.
	if r := runBin(t, bin, nil, "-db", dsn, "demo"); r.code != 1 || !strings.Contains(r.stderr, "SQLite file") {
		t.Errorf("demo on a DSN = %d\n%s", r.code, r.stderr)
	}
	if r := runBin(t, bin, nil, "-db", dsn, "verify"); r.code != 0 {
		t.Errorf("verify after the decisions = %d\n%s", r.code, r.stdout)
	}
}

// Refusals on a DSN, every command: a wrong password, a database another
// build migrated further, and one whose tables agentrt did not create are
// each one sentence, exit 1, and change nothing. The wrong password is
// said as a refused login, without pgx's chain of causes.
func TestCLI_PostgresRefusalsAreOneSentenceAndChangeNothing(t *testing.T) {
	bin := build(t, "agentrt", "cmd/agentrt")
	wrong := wrongPasswordDSN(t)

	newer := freshDSN(t)
	ids := waitingRuns(t, newer, 1)
	exec1(t, newer, "INSERT INTO schema_migrations (version) VALUES (99)")
	foreign := freshDSN(t)
	exec1(t, foreign, "CREATE TABLE runs (id TEXT PRIMARY KEY, note TEXT)")
	exec1(t, foreign, "INSERT INTO runs VALUES ('x', 'theirs')")

	commands := [][]string{
		{"runs"}, {"show", ids[0]}, {"events", ids[0]}, {"follow", "-once"}, {"verify"}, {"approvers", "list"},
		{"approve", ids[0], "-yes", "-by", "a"}, {"reject", ids[0], "-yes", "-by", "a"}, {"cancel", ids[0], "-by", "a"},
		{"approvers", "invite", "bob", "-by", "a"},
	}
	for _, c := range []struct {
		name, dsn, want string
		state           func() string
	}{
		{"wrong password", wrong, `the server refused to log in user "agentrt_pw": the password is wrong`, func() string { return "" }},
		{"newer schema", newer, "newer than this agentrt's", func() string {
			return strconv.Itoa(queryInt(t, newer, "SELECT count(*) FROM events")) + "/" +
				strconv.Itoa(queryInt(t, newer, "SELECT max(version) FROM schema_migrations")) + "/" +
				strconv.Itoa(queryInt(t, newer, "SELECT count(*) FROM approvals WHERE status = 'pending'"))
		}},
		{"foreign schema", foreign, "not an agentrt runs database", func() string {
			return strconv.Itoa(queryInt(t, foreign, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")) + "/" +
				strconv.Itoa(queryInt(t, foreign, "SELECT count(*) FROM runs"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.state()
			for _, args := range commands {
				r := runBin(t, bin, nil, append([]string{"-db", c.dsn}, args...)...)
				if r.code != 1 || !strings.Contains(r.stderr, c.want) {
					t.Errorf("agentrt %v = %d, want 1 and %q\n%s", args, r.code, c.want, r.stderr)
				}
				oneSentence(t, strings.Join(args, " "), r.stderr)
				if strings.Contains(r.stderr, "failed SASL auth") || strings.Contains(r.stderr, "failed to connect") {
					t.Errorf("agentrt %v printed pgx's chain: %s", args, r.stderr)
				}
				if strings.Contains(r.stdout+r.stderr, "wrong-Pa55") {
					t.Errorf("agentrt %v printed the password: %s", args, r.stderr)
				}
			}
			if after := c.state(); after != before {
				t.Errorf("the refused commands changed the database: %s, was %s", after, before)
			}
		})
	}
}

// A read-only store's sessions are read-only on the server: a write through
// its pool is refused by PostgreSQL itself.
func TestOpen_ReadOnlyIsEnforcedByTheServer(t *testing.T) {
	dsn := freshDSN(t)
	waitingRuns(t, dsn, 1)
	st, err := openReadOnly(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Pool().Exec(context.Background(), "DELETE FROM events")
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a write on a read-only store = %v, want the server's read-only refusal", err)
	}
}

// A message that names a database given as a DSN with a password names it
// without the password: a missing run or budget, for each command that
// reports one.
func TestCLI_MessagesNameADSNWithoutItsPassword(t *testing.T) {
	bin := build(t, "agentrt", "cmd/agentrt")
	dsn := freshDSN(t)
	waitingRuns(t, dsn, 1)
	// The role may exist already with another password (the postgres
	// module's tests set their own on the same cluster): set ours.
	exec1(t, dsn, `DO $$ BEGIN CREATE ROLE agentrt_pw LOGIN PASSWORD 'right-password';
		EXCEPTION WHEN duplicate_object OR unique_violation THEN ALTER ROLE agentrt_pw PASSWORD 'right-password'; END $$`)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	exec1(t, dsn, "GRANT USAGE ON SCHEMA "+schema+" TO agentrt_pw; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+schema+
		" TO agentrt_pw; GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "+schema+" TO agentrt_pw")
	u.User = url.UserPassword("agentrt_pw", "right-password")
	for _, args := range [][]string{
		{"show", "no-such-run"}, {"events", "no-such-run"}, {"cancel", "no-such-run", "-by", "a"}, {"budgets", "show", "no-such-budget"},
	} {
		r := runBin(t, bin, nil, append([]string{"-db", u.String()}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "no-such-") {
			t.Errorf("agentrt %v = %d, want 1 naming what is missing\n%s", args, r.code, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, "right-password") {
			t.Errorf("agentrt %v printed the password: %s", args, r.stderr)
		}
	}
}
