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
	"slices"
	"sync"

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
	state []byte // the SHA-256 state after the salt, marshaled
	// h is restored to state for each payload, under mu: a store keeps a
	// run's key for its later transactions (keyCache).
	mu sync.Mutex
	h  hash.Hash
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
	k.mu.Lock()
	defer k.mu.Unlock()
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
	k, ok := t.recalled(runID)
	if !ok {
		// A run's salt never changes while it has one, so the key this
		// store read before serves. Whether the run was erased since is
		// settled before the request's writes are kept: by the run's live
		// status, compared in this request (a RunUpdate from live statuses
		// under its lease, or a step write fenced by its lease; only an
		// ended run is erased), or else by reading the mark (proveLive).
		if key := t.s.keys.get(runID); key != nil {
			k, ok = runKey{key: key}, true
			t.remember(runID, k)
			if t.unproven == nil {
				t.unproven = t.unprovenBuf[:0]
			}
			t.unproven = append(t.unproven, runID)
		}
	}
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
		t.remember(runID, k)
		if k.key != nil && !k.erased {
			t.published = append(t.published, publishedKey{runID, k.key})
		}
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
	if err := t.write(`INSERT INTO run_salts (run_id, salt) VALUES (?, ?)`, outcome{}, runID, salt); err != nil {
		return err
	}
	b, _ := hex.DecodeString(salt)
	k := runKey{key: newKeyed(b)}
	t.remember(runID, k)
	t.published = append(t.published, publishedKey{runID, k.key})
	return nil
}

// proveLive checks the runs whose cached keys this request used without
// comparing their live status: an erased one fails the request, as
// saltFor would have had it read the mark.
func (t *tx) proveLive() error {
	defer func() { t.unproven, t.live = t.unproven[:0], t.live[:0] }()
	for _, id := range t.unproven {
		if slices.Contains(t.live, id) {
			continue
		}
		if k, _ := t.recalled(id); k.erased {
			continue // this request erased it, and saltFor refused it since
		}
		var erasedAt sql.NullString
		if err := t.queryRow(`SELECT erased_at FROM runs WHERE id = ?`, id).Scan(&erasedAt); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if erasedAt.String != "" {
			return fmt.Errorf("%w: run %s was erased and takes no more events", agentrt.ErrRunState, id)
		}
	}
	return nil
}

// proven notes that this request compared runID's live status.
func (t *tx) proven(runID string) {
	if n := len(t.live); n == 0 || t.live[n-1] != runID {
		if t.live == nil {
			t.live = t.liveBuf[:0]
		}
		t.live = append(t.live, runID)
	}
}

func (t *tx) recalled(runID string) (runKey, bool) {
	if t.salt1ID != "" && t.salt1ID == runID {
		return t.salt1, true
	}
	k, ok := t.salts[runID]
	return k, ok
}

func (t *tx) remember(runID string, k runKey) {
	if t.salt1ID == "" || t.salt1ID == runID {
		t.salt1ID, t.salt1 = runID, k
		return
	}
	if t.salts == nil {
		t.salts = map[string]runKey{}
	}
	t.salts[runID] = k
}

// publishedKey is a run's key this transaction read or made, which the
// store keeps once the transaction commits; a nil key drops the run's.
type publishedKey struct {
	runID string
	key   *keyed
}

// keyCache is a store's memory of runs' keys, as committed: a run's salt
// is drawn once, when the run is inserted, and never changes until
// erasure deletes it, so a key read once serves every later transaction
// of the run in this process. A request that uses a cached key proves the
// run was not erased before its writes are kept (tx.proveLive), so an
// erasure by another process is always seen. At most maxCachedKeys runs
// are kept.
type keyCache struct {
	mu sync.Mutex
	m  map[string]*keyed
}

const maxCachedKeys = 4096

func (c *keyCache) get(runID string) *keyed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[runID]
}

func (c *keyCache) publish(ks []publishedKey) {
	if len(ks) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range ks {
		if k.key == nil {
			delete(c.m, k.runID)
			continue
		}
		if c.m == nil || len(c.m) >= maxCachedKeys {
			c.m = make(map[string]*keyed, 64)
		}
		c.m[k.runID] = k.key
	}
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
