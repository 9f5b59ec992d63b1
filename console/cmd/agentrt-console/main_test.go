package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// A non-loopback address without TLS is refused before the database is
// opened, and so is half a TLS pair.
func TestRun_RefusesANonLoopbackAddressWithoutTLS(t *testing.T) {
	db := filepath.Join(t.TempDir(), "missing.db")
	for _, args := range [][]string{
		{"-db", db, "-addr", "0.0.0.0:7380"},
		{"-db", db, "-addr", "192.0.2.10:7380"},
		{"-db", db, "-addr", "127.0.0.1:7380", "-tls-cert", "c.pem"},
	} {
		var stderr bytes.Buffer
		if code := run(args, &stderr); code != 2 || !strings.Contains(stderr.String(), "TLS") && !strings.Contains(stderr.String(), "tls") {
			t.Errorf("%q: exit %d, %q; want 2 naming TLS", args, code, stderr.String())
		}
	}
}
