package sign

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func key(i int) Key {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	return sha256.Sum256(b[:])
}

// A signature is accepted once; it is remembered for twice the skew and
// then forgotten; past its cap the set refuses rather than grows, and
// frees room as old signatures lapse.
func TestReplay_RemembersForTwiceTheSkewAndRefusesPastItsCap(t *testing.T) {
	r := NewReplay(3, time.Minute)
	for i := 0; i < 3; i++ {
		if err := r.Check(key(i), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Check(key(0), t0.Add(time.Minute)); !errors.Is(err, ErrReplay) {
		t.Fatalf("a repeat inside the window = %v", err)
	}
	if err := r.Check(key(3), t0.Add(time.Minute)); !errors.Is(err, ErrFull) || r.Len() != 3 {
		t.Fatalf("past the cap = %v with %d held", err, r.Len())
	}
	// Two minutes after the first was accepted it lapses, and only it.
	if err := r.Check(key(3), t0.Add(2*time.Minute)); err != nil || r.Len() != 3 {
		t.Fatalf("after the first lapsed = %v with %d held", err, r.Len())
	}
	if err := r.Check(key(1), t0.Add(2*time.Minute)); !errors.Is(err, ErrReplay) {
		t.Fatalf("the second, not yet lapsed = %v", err)
	}
	if err := r.Check(key(0), t0.Add(2*time.Minute)); !errors.Is(err, ErrFull) {
		t.Fatalf("the first, lapsed, with the set full = %v", err)
	}
}

// A signature verifies only under its own secret, fields and time.
func TestVerify_BindsEveryField(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	body := []byte(`{"a":1}`)
	h := func(ts int64, nonce, sig string) map[string][]string {
		return map[string][]string{HeaderTimestamp: {fmt.Sprint(ts)}, HeaderNonce: {nonce}, HeaderSignature: {sig}}
	}
	ts := t0.Unix()
	good := Sign(secret, ts, "n1", "POST", "/p?q=1", body)
	if _, err := Verify(secret, h(ts, "n1", good), "POST", "/p?q=1", body, t0, time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		ts           int64
		nonce, m, p  string
		b            []byte
		want         error
		secretChange bool
	}{
		"nonce":  {ts, "n2", "POST", "/p?q=1", body, ErrBad, false},
		"method": {ts, "n1", "PUT", "/p?q=1", body, ErrBad, false},
		"path":   {ts, "n1", "POST", "/p", body, ErrBad, false},
		"query":  {ts, "n1", "POST", "/p?q=2", body, ErrBad, false},
		"body":   {ts, "n1", "POST", "/p?q=1", []byte(`{"a":2}`), ErrBad, false},
		"time":   {ts + 1, "n1", "POST", "/p?q=1", body, ErrBad, false},
		"secret": {ts, "n1", "POST", "/p?q=1", body, ErrBad, true},
		"skew":   {ts - 61, "n1", "POST", "/p?q=1", body, ErrSkew, false},
	} {
		s := secret
		if c.secretChange {
			s = []byte("another secret of thirty-two b!!")
		}
		sig := good
		if name == "skew" {
			sig = Sign(secret, c.ts, "n1", "POST", "/p?q=1", body)
		}
		if _, err := Verify(s, h(c.ts, c.nonce, sig), c.m, c.p, c.b, t0, time.Minute); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// One check costs the same with 10, 1,000 or 10,000 signatures in the window:
// a map lookup and, amortised, one lapse. Signatures arrive a millisecond
// apart and are remembered for held milliseconds, so each check forgets
// one and the window stays full.
func BenchmarkReplay_Check(b *testing.B) {
	for _, held := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			const step = time.Millisecond
			r := NewReplay(held+1, time.Duration(held)*step/2)
			for i := 0; i < held; i++ {
				r.Check(key(i), t0.Add(time.Duration(i)*step))
			}
			keys := make([]Key, b.N)
			for i := range keys {
				keys[i] = key(held + i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := r.Check(keys[i], t0.Add(time.Duration(held+i)*step)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if r.Len() != held {
				b.Fatalf("%d held, want %d", r.Len(), held)
			}
		})
	}
}
