package agentrt

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentrt/agentrt/internal/files"
)

// PinnedKeys are approver keys trusted from outside the database. A
// deployment that keeps them in an owner-only file the database's writers
// cannot write excludes those writers from approving: a key they enroll
// is not pinned, so nothing it signs is a grant.
type PinnedKeys struct {
	keys map[string][]byte // credential id -> PKIX DER
}

// Holds reports whether a's credential is pinned with a's public key.
func (p *PinnedKeys) Holds(a EnrolledApprover) bool {
	k, ok := p.keys[a.CredentialID]
	return ok && bytes.Equal(k, a.PublicKey)
}

// Len is how many keys are pinned.
func (p *PinnedKeys) Len() int { return len(p.keys) }

// PinnedLine is an approver's line in a pinned keys file: its credential
// id, its public key (base64 of the PKIX DER) and its name, separated by
// spaces. 'agentrt approvers list -pin' prints these lines.
func PinnedLine(a EnrolledApprover) string {
	return a.CredentialID + " " + base64.StdEncoding.EncodeToString(a.PublicKey) + " " + a.Name
}

// ParsePinnedKeys reads PinnedLine lines; blank lines and lines starting
// with # are skipped.
func ParsePinnedKeys(b []byte) (*PinnedKeys, error) {
	p := &PinnedKeys{keys: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) < 2 {
			return nil, &ConfigError{Field: fmt.Sprintf("pinned keys line %d", n), Reason: "must be CREDENTIAL_ID PUBLIC_KEY [NAME]"}
		}
		k, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil {
			return nil, &ConfigError{Field: fmt.Sprintf("pinned keys line %d", n), Reason: "the public key is not base64"}
		}
		if _, _, err := ParsePublicKey(k); err != nil {
			return nil, &ConfigError{Field: fmt.Sprintf("pinned keys line %d", n), Reason: err.Error()}
		}
		p.keys[f[0]] = k
	}
	return p, sc.Err()
}

// MaxPinnedKeysFile is the most bytes LoadPinnedKeys reads: room for
// thousands of keys, and a bound on what a damaged path can make it read.
const MaxPinnedKeysFile = 1 << 20

// LoadPinnedKeys reads a pinned keys file under the rule for every trusted
// file (a regular file, no symbolic link followed, owned by the effective
// user, writable by no one else, at most MaxPinnedKeysFile bytes, checked
// on the open descriptor): a file another account can write pins that
// account's keys too. A refusal is an *InsecureModeError.
func LoadPinnedKeys(path string) (*PinnedKeys, error) {
	b, err := files.ReadOwned(path, MaxPinnedKeysFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("agentrt: no pinned keys file at %s: %w", path, ErrNotFound)
		}
		return nil, err
	}
	return ParsePinnedKeys(b)
}
