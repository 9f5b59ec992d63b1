package seal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func sealer(t *testing.T) (*Sealer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seal.key")
	s, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// A state opens for its own request before its expiry, and the key file
// is written owner-only and read back the same by a second opener.
func TestSeal_RoundTripsUnderTheSameKey(t *testing.T) {
	s, path := sealer(t)
	now := time.Unix(1_800_000_000, 0)
	st := State{ApprovalID: "ap-1", Key: "k1", Expires: now.Add(time.Minute)}
	again, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Open(s.Seal(st), "k1", now)
	if err != nil {
		t.Fatal(err)
	}
	if got.ApprovalID != "ap-1" || got.Key != "k1" || !got.Expires.Equal(st.Expires) {
		t.Fatalf("opened %+v, sealed %+v", got, st)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
}

// An altered byte, another request's key, a passed expiry, another
// proxy's key and garbage are each refused with ErrRefused.
func TestSeal_RefusesAlteredMovedExpiredOrForeignStates(t *testing.T) {
	s, _ := sealer(t)
	other, _ := sealer(t)
	now := time.Unix(1_800_000_000, 0)
	st := State{ApprovalID: "ap-1", Key: "k1", Expires: now.Add(time.Minute)}
	good := s.Seal(st)
	flipped := []byte(good)
	flipped[3] ^= 0x01
	if flipped[3] == good[3] {
		t.Fatal("no change")
	}
	cases := map[string]struct {
		state, key string
		at         time.Time
		by         *Sealer
	}{
		"altered":         {string(flipped), "k1", now, s},
		"another request": {good, "k2", now, s},
		"expired":         {good, "k1", now.Add(time.Minute), s},
		"another key":     {good, "k1", now, other},
		"garbage":         {"not-a-state", "k1", now, s},
		"empty":           {"", "k1", now, s},
	}
	for name, c := range cases {
		if _, err := c.by.Open(c.state, c.key, c.at); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: err %v, want ErrRefused", name, err)
		}
	}
}

// A key file others can read is refused rather than used.
func TestSeal_RefusesAKeyFileOthersCanRead(t *testing.T) {
	_, path := sealer(t)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(path); err == nil {
		t.Fatal("a group/other-readable key was accepted")
	}
}

// A token sealed under a derived key opens under that derivation alone:
// not under the parent, nor under another label, and a requestState does
// not open as a task handle; OpenAny reads the request it names.
func TestSeal_DerivedKeysKeepUsesApart(t *testing.T) {
	s, _ := sealer(t)
	now := time.Unix(1_800_000_000, 0)
	st := State{ApprovalID: "ap-1", Key: "k1", Expires: now.Add(time.Minute)}
	tasks := s.Derive("task")
	handle := tasks.Seal(st)
	got, err := s.Derive("task").OpenAny(handle, now)
	if err != nil || got.Key != "k1" || got.ApprovalID != "ap-1" {
		t.Fatalf("the derived key did not open its own token: %+v, %v", got, err)
	}
	for name, open := range map[string]func() error{
		"the parent":               func() error { _, err := s.Open(handle, "k1", now); return err },
		"another label":            func() error { _, err := s.Derive("other").OpenAny(handle, now); return err },
		"a requestState as task":   func() error { _, err := tasks.OpenAny(s.Seal(st), now); return err },
		"a handle past its expiry": func() error { _, err := tasks.OpenAny(handle, now.Add(time.Hour)); return err },
	} {
		if err := open(); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: err %v, want ErrRefused", name, err)
		}
	}
}
