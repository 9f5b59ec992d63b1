package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The demonstration goes the whole way round: the bot is notified, shows
// the approval as text with the model's bidi override escaped, approves
// with the hash it was shown, and the payment runs once.
func TestDemo_NotifiesShowsApprovesAndRunsOnce(t *testing.T) {
	var out bytes.Buffer
	if err := demo(context.Background(), &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"bot: notified approval.requested for pay",
		"APPROVAL PENDING ",
		`to (14 bytes): "ACME \u{202E}evil"`,
		"----- end of approval ",
		": approved\n",
		"runtime: run is COMPLETED; the payment ran 1 time(s)",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("the demonstration did not print %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\u202e") {
		t.Fatalf("the bidi override reached the output raw:\n%s", got)
	}
}

// A secret file others can read, or one too short, is refused.
func TestReadSecret_RefusesAFileOthersCanReadOrAShortSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("s", 40) + "\n"
	if _, err := readSecret(write("open", long, 0o644)); err == nil || !strings.Contains(err.Error(), "owner-only") {
		t.Fatalf("a readable secret file = %v", err)
	}
	if _, err := readSecret(write("short", "short\n", 0o600)); err == nil {
		t.Fatal("a short secret was accepted")
	}
	b, err := readSecret(write("good", long, 0o600))
	if err != nil || string(b) != strings.Repeat("s", 40) {
		t.Fatalf("readSecret = %q, %v", b, err)
	}
}
