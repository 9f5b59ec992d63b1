package postgres_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// pwRole is the role scripts/pg-test.sh makes give its password over TCP.
const pwRole = "agentrt_pw"

// ensurePasswordRole creates pwRole with password right if it is missing.
func ensurePasswordRole(t *testing.T, base, right string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	q := `DO $$ BEGIN CREATE ROLE ` + pwRole + ` LOGIN PASSWORD '` + right + `';
		EXCEPTION WHEN duplicate_object OR unique_violation THEN ALTER ROLE ` + pwRole + ` PASSWORD '` + right + `'; END $$`
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatal(err)
	}
}

// A password never reaches anything printed, in any form pgx accepts: a
// URL's user:password@, ?password= (and sslpassword), key=value with and
// without spaces around '=', quoted values with spaces and escaped quotes,
// and strings that do not parse. Checked in Redact, in every Open's error
// (a refused connection, and on the real cluster a wrong password), in the
// registry's, and in the CLI's stderr.
func TestOpen_PasswordNeverPrinted(t *testing.T) {
	const secret = "S3cretPw0rd"
	const spaced = "S3cret Pw0rd"
	words := []string{secret, "S3cret", "Pw0rd"}
	// Port 1 on loopback refuses at once.
	forms := []string{
		"postgres://alice:" + secret + "@127.0.0.1:1/db?sslmode=disable",
		"postgresql://alice:" + url.QueryEscape(spaced) + "@127.0.0.1:1/db?sslmode=disable",
		"postgres://alice@127.0.0.1:1/db?sslmode=disable&password=" + secret,
		"postgres://alice@127.0.0.1:1/db?password=" + url.QueryEscape(spaced) + "&sslmode=disable",
		"postgres://alice@127.0.0.1:1/db?sslpassword=" + secret + "&sslmode=disable",
		"host=127.0.0.1 port=1 user=alice password=" + secret + " dbname=db sslmode=disable",
		"host=127.0.0.1 port=1 user=alice password = " + secret + " dbname=db sslmode=disable",
		"host=127.0.0.1 port=1 user=alice password= '" + spaced + "' dbname=db sslmode=disable",
		"password = 'S3cret \\' Pw0rd' host=127.0.0.1 port=1 user=alice sslmode=disable",
		// These do not parse.
		"postgres://alice:" + secret + "@127.0.0.1:notaport/db",
		"postgres://alice@127.0.0.1:1/db?password=" + secret + "&connect_timeout=soon",
		"host=127.0.0.1 port=abc password = '" + spaced + "'",
		"host=127.0.0.1 password='" + spaced,
		"postgres://alice:" + secret + "%zz@127.0.0.1/db",
	}
	check := func(t *testing.T, where, text string) {
		t.Helper()
		for _, w := range words {
			if strings.Contains(text, w) {
				t.Errorf("%s prints the password (%q): %s", where, w, text)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run := func(t *testing.T, dsn string) {
		check(t, "Redact", postgres.Redact(dsn))
		check(t, "backend.Redact", backend.Redact(dsn))
		if _, err := postgres.Open(ctx, dsn); err == nil {
			t.Fatalf("Open(%s) succeeded", postgres.Redact(dsn))
		} else {
			check(t, "Open", err.Error())
		}
		if _, err := postgres.OpenExisting(ctx, dsn, true); err == nil {
			t.Fatal("OpenExisting succeeded")
		} else {
			check(t, "OpenExisting", err.Error())
		}
		if _, err := backend.Open(ctx, dsn, true); err == nil {
			t.Fatal("backend.Open succeeded")
		} else {
			check(t, "backend.Open", err.Error())
		}
		var out, errb bytes.Buffer
		if code := cmdline.Run([]string{"-db", dsn, "runs"}, strings.NewReader(""), &out, &errb); code != cmdline.ExitFailure {
			t.Errorf("agentrt runs = %d, want 1\n%s", code, errb.String())
		}
		if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); n != 0 {
			t.Errorf("agentrt runs printed %d lines, want one sentence: %s", n+1, errb.String())
		}
		check(t, "agentrt runs", out.String()+errb.String())
	}
	for _, dsn := range forms {
		t.Run("", func(t *testing.T) { run(t, dsn) })
	}
	// Redact still says which database, without the password.
	if got := postgres.Redact(forms[0]); got != "postgres://alice:xxxxx@127.0.0.1:1/db?sslmode=disable" {
		t.Errorf("Redact(URL) = %q", got)
	}
	if got := postgres.Redact(forms[7]); got != "host=127.0.0.1 port=1 user=alice password=xxxxx dbname=db sslmode=disable" {
		t.Errorf("Redact(key=value) = %q", got)
	}

	// On the real cluster, a role that must give its password is refused
	// a wrong one, in every form, and the refusal prints neither password.
	base := pgtest.DSN(t)
	ensurePasswordRole(t, base, "right-"+secret)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	words = append(words, "right-"+secret)
	for _, dsn := range []string{
		"postgres://" + pwRole + ":" + secret + "@" + host + ":" + port + "/postgres?sslmode=disable",
		"postgres://" + pwRole + "@" + host + ":" + port + "/postgres?sslmode=disable&password=" + url.QueryEscape(spaced),
		"host=" + host + " port=" + port + " user=" + pwRole + " dbname=postgres sslmode=disable password = " + secret,
		"host=" + host + " port=" + port + " user=" + pwRole + " dbname=postgres sslmode=disable password='" + spaced + "'",
	} {
		t.Run("cluster", func(t *testing.T) {
			_, err := postgres.OpenExisting(ctx, dsn, true)
			if err == nil || !strings.Contains(err.Error(), "the server refused to log in") {
				t.Fatalf("a wrong password: %v (the cluster must require a password of %s, as scripts/pg-test.sh makes it)", err, pwRole)
			}
			run(t, dsn)
		})
	}
}
