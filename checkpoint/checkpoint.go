package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/files"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Origin is the first line of every checkpoint's text: which log it is.
const Origin = "agentrt event log"

// Checkpoint is one batch's record of the tree: its text (Body) is
//
//	agentrt event log
//	<size>
//	<root, base64>
//	prev <previous checkpoint's hash, hex, or "-" for the first>
//	time <RFC 3339 UTC>
//
// in the C2SP checkpoint layout, so a signed one is a note any
// golang.org/x/mod/sumdb/note verifier opens.
type Checkpoint struct {
	// Size is the number of leaves the tree holds.
	Size int64 `json:"size"`
	// Root is the tree's hash at Size.
	Root tlog.Hash `json:"-"`
	// Prev is the previous checkpoint's Hash ("" for the first).
	Prev string `json:"prev"`
	// At is when the checkpoint was made.
	At time.Time `json:"at"`
	// Floor is the integrator's cursor (Store.CheckpointPending).
	Floor int64 `json:"-"`
	// Body is the checkpoint's text.
	Body string `json:"body"`
	// Hash is the SHA-256 of Body, hex: what the next checkpoint's Prev
	// names.
	Hash string `json:"hash"`
	// Signed is Body as a signed note, or "" when no key signed it.
	Signed string `json:"signed,omitempty"`
}

// Kept is c as verify -head takes it kept elsewhere: SIZE:ROOT, the root
// in base64 as the checkpoint's text has it.
func (c Checkpoint) Kept() string {
	return fmt.Sprintf("%d:%s", c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// Make makes the checkpoint of a tree, signing it when signer is not nil.
func Make(size int64, root tlog.Hash, prev string, at time.Time, signer note.Signer) (Checkpoint, error) {
	at = at.UTC().Truncate(time.Microsecond)
	p := prev
	if p == "" {
		p = "-"
	}
	body := fmt.Sprintf("%s\n%d\n%s\nprev %s\ntime %s\n", Origin, size,
		base64.StdEncoding.EncodeToString(root[:]), p, at.Format(time.RFC3339Nano))
	c := Checkpoint{Size: size, Root: root, Prev: prev, At: at, Body: body, Hash: BodyHash(body)}
	if signer != nil {
		msg, err := note.Sign(&note.Note{Text: body}, signer)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("agentrt: signing checkpoint %d: %w", size, err)
		}
		c.Signed = string(msg)
	}
	return c, nil
}

// BodyHash is the hash a checkpoint's text is named by.
func BodyHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// ErrMalformed is a checkpoint text, key or receipt that does not parse.
var ErrMalformed = errors.New("agentrt: malformed checkpoint")

// Parse reads a checkpoint's text (not a signed note: Open reads those).
func Parse(body string) (Checkpoint, error) {
	lines := strings.Split(body, "\n")
	if len(lines) != 6 || lines[5] != "" || lines[0] != Origin {
		return Checkpoint{}, fmt.Errorf("%w: it is not an %q checkpoint of five lines", ErrMalformed, Origin)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return Checkpoint{}, fmt.Errorf("%w: the size %q is not a count", ErrMalformed, clip(lines[1]))
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("%w: the root is not a base64 SHA-256", ErrMalformed)
	}
	prev, ok := strings.CutPrefix(lines[3], "prev ")
	if !ok || (prev != "-" && !isHex64(prev)) {
		return Checkpoint{}, fmt.Errorf("%w: the prev line is not a hash", ErrMalformed)
	}
	if prev == "-" {
		prev = ""
	}
	atText, ok := strings.CutPrefix(lines[4], "time ")
	at, err := time.Parse(time.RFC3339Nano, atText)
	if !ok || err != nil {
		return Checkpoint{}, fmt.Errorf("%w: the time line is not RFC 3339", ErrMalformed)
	}
	c := Checkpoint{Size: size, Prev: prev, At: at, Body: body, Hash: BodyHash(body)}
	copy(c.Root[:], raw)
	return c, nil
}

// Open checks a signed checkpoint with the verifier and parses its text.
func Open(signed []byte, v note.Verifier) (Checkpoint, error) {
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("agentrt: the checkpoint's signature does not verify with key %s: %w", v.Name(), err)
	}
	c, err := Parse(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	c.Signed = string(signed)
	return c, nil
}

// MaxKeyFile bounds what LoadSigner and LoadVerifier read.
const MaxKeyFile = 4096

// NewKey makes a signing key named name: skey is the private key (for an
// owner-only file), vkey the public key to hand to verifiers.
func NewKey(name string) (skey, vkey string, err error) {
	return note.GenerateKey(rand.Reader, name)
}

// LoadSigner reads a private signing key (as NewKey makes it) from a file
// only its owner can read or write, under the rule for every secret file.
func LoadSigner(path string) (note.Signer, error) {
	b, err := files.ReadSecret(path, MaxKeyFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("agentrt: no checkpoint signing key at %s", path)
		}
		return nil, err
	}
	s, err := note.NewSigner(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not hold a note signing key (agentrt checkpoint -new-key makes one)", ErrMalformed, path)
	}
	return s, nil
}

// ParseVerifier reads a public key as NewKey prints it.
func ParseVerifier(vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a note verifier key (name+hash+key)", ErrMalformed, clip(vkey))
	}
	return v, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
