package sqlstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	agentrt "github.com/agentrt/agentrt"
)

// saltSize is the bytes of a run's salt: one SHA-256 block.
const saltSize = 64

// keyed hashes one run's payloads: SHA-256 over the run's secret 64-byte
// salt followed by the payload. The salt fills SHA-256's first block, so
// the state after it is computed once per run and restored for each
// payload: keying costs a copy, not a block. Without the salt no one can compute
// the digest of a guess; that is all the key is for (the chain, not the
// key, proves integrity). A nil *keyed is a run with no salt (created
// before salts, or no run at all): plain SHA-256 of the payload.
type keyed struct {
	state []byte    // the SHA-256 state after the salt, marshaled
	h     hash.Hash // restored to state for each payload
}

func newKeyed(salt []byte) *keyed {
	if salt == nil {
		return nil
	}
	h := sha256.New()
	h.Write(salt)
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic("sqlstore: SHA-256 state will not marshal: " + err.Error())
	}
	return &keyed{state: state, h: h}
}

// payloadDigest is the digest the chain hashes for a payload.
func (k *keyed) payloadDigest(payload []byte) [32]byte {
	if k == nil {
		return sha256.Sum256(payload)
	}
	if err := k.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(k.state); err != nil {
		panic("sqlstore: SHA-256 state will not restore: " + err.Error())
	}
	k.h.Write(payload)
	var out [32]byte
	k.h.Sum(out[:0])
	return out
}

// SaltSource is where salts are drawn from. Tests whose golden files hold
// chain hashes replace it with a fixed stream; nothing else may.
var SaltSource io.Reader = rand.Reader

// newSalt draws a run's salt.
func newSalt() (string, error) {
	var b [saltSize]byte
	if _, err := io.ReadFull(SaltSource, b[:]); err != nil {
		return "", fmt.Errorf("agentrt: drawing a run's salt: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// runKey is what a transaction knows of a run's salt.
type runKey struct {
	key    *keyed // nil: no salt
	erased bool
}

// saltFor returns the key of runID's events, read once per transaction. An
// erased run takes no event but its run.erased: a late outcome would put
// back content the erasure removed.
func (t *tx) saltFor(runID string, typ agentrt.EventType) (*keyed, error) {
	if runID == "" {
		return nil, nil
	}
	k, ok := t.salts[runID]
	if !ok {
		var salt, erasedAt sql.NullString
		err := t.queryRow(`SELECT s.salt, r.erased_at FROM runs r LEFT JOIN run_salts s ON s.run_id = r.id WHERE r.id = ?`, runID).Scan(&salt, &erasedAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if salt.Valid {
			b, err := hex.DecodeString(salt.String)
			if err != nil || len(b) != saltSize {
				return nil, fmt.Errorf("agentrt: run %s's salt is not %d bytes of hex", runID, saltSize)
			}
			k.key = newKeyed(b)
		}
		k.erased = erasedAt.String != ""
		if t.salts == nil {
			t.salts = map[string]runKey{}
		}
		t.salts[runID] = k
	}
	if k.erased && typ != agentrt.EventRunErased {
		return nil, fmt.Errorf("%w: run %s was erased and takes no more events", agentrt.ErrRunState, runID)
	}
	return k.key, nil
}

// insertSalt gives a new run its salt.
func (t *tx) insertSalt(runID string) error {
	salt, err := newSalt()
	if err != nil {
		return err
	}
	if _, err := t.exec(`INSERT INTO run_salts (run_id, salt) VALUES (?, ?)`, runID, salt); err != nil {
		return err
	}
	b, _ := hex.DecodeString(salt)
	if t.salts == nil {
		t.salts = map[string]runKey{}
	}
	t.salts[runID] = runKey{key: newKeyed(b)}
	return nil
}

// saltCache is the verifier's memory of runs' salts: events of one run are
// near each other in the chain, so a small cache reads each salt about
// once.
type saltCache struct {
	s *Store
	m map[string]*keyed
}

const saltCacheSize = 4096

func (c *saltCache) of(ctx context.Context, runID string) (*keyed, error) {
	if runID == "" {
		return nil, nil
	}
	if k, ok := c.m[runID]; ok {
		return k, nil
	}
	if c.m == nil || len(c.m) >= saltCacheSize {
		c.m = make(map[string]*keyed, 64)
	}
	var salt string
	err := c.s.rdb.QueryRowContext(ctx, c.s.d.Rebind(`SELECT salt FROM run_salts WHERE run_id = ?`), runID).Scan(&salt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		c.m[runID] = nil
		return nil, nil
	case err != nil:
		return nil, err
	}
	b, err := hex.DecodeString(salt)
	if err != nil || len(b) != saltSize {
		// Not a salt: hash with something no payload was keyed by, so
		// the run's events are reported broken.
		b = []byte("not a salt")
	}
	k := newKeyed(b)
	c.m[runID] = k
	return k, nil
}
