package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// On a database whose collation is linguistic (ICU's English, which sorts
// "Ab" between "a" and "b", where bytes put it before both), a run id
// prefix still finds exactly the ids that begin with it: the range is
// compared byte by byte.
func TestRunIDsByPrefix_ExactUnderALinguisticCollation(t *testing.T) {
	base := pgtest.DSN(t)
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	db := "icu_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db+" TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C'"); err != nil {
		t.Fatalf("creating a database with ICU's English collation: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			c.Exec(context.Background(), "DROP DATABASE "+db+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, _ := url.Parse(base)
	u.Path = "/" + db
	st := open(t, u.String())
	defer st.Close()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"a-b", "a.c", "a/z", "ab1", "Ab", "B2", "bz", "claude-desktop.0a1b", "claude.x"} {
		r := agentrt.Run{ID: id, Goal: "g", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: t0, StartedAt: t0}
		if _, err := st.Update(ctx, func(tx agentrt.Tx) error { return tx.RunInsert(r) }); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, want := range map[string]string{"a-": "a-b", "a.": "a.c", "a": "a-b a.c a/z ab1", "A": "Ab", "B": "B2", "b": "bz",
		"claude-": "claude-desktop.0a1b", "claude.": "claude.x"} {
		got, err := st.RunIDsByPrefix(ctx, prefix, 10)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("RunIDsByPrefix(%q) = %q, want %q", prefix, got, want)
		}
	}
}
