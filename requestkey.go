package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// RequestKey is what identical requests share: the lowercase hex SHA-256 of
// the tool's name, a NUL byte, and CanonicalJSON of the arguments (empty
// arguments are {}). The canonical form is the one an approval's hash
// binds, so two requests share a key exactly when an approval of one is an
// approval of the other's request. Tool names cannot hold a NUL, so no
// name and arguments read as another pair. Arguments the runtime refuses
// as JSON have no key. The engine records each tool call's key with its
// decision (Store.StepsByRequestKey finds them; Gate.Lookup reads them).
func RequestKey(tool string, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	c, err := CanonicalJSON(args)
	if err != nil {
		return "", err
	}
	return requestKeyOf(tool, c), nil
}

// requestKeyOf hashes a name and arguments already in canonical form.
func requestKeyOf(tool string, canonical []byte) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil))
}

// MaxLookup bounds how many records Gate.Lookup returns.
const MaxLookup = 100

// RequestRecord is one recorded step of a request, as Gate.Lookup finds
// it: the step (its decision, policy decision and observation, if any)
// and its latest approval, if it asked for one.
type RequestRecord struct {
	Step     Step
	Approval *Approval
}

// Lookup finds the steps recorded under a request key (RequestKey), of any
// run, newest first, at most limit of them (limit 0 means 10; at most
// MaxLookup), each with its latest approval. A framework session restarted
// under a new run id looks up the request it is about to propose and
// collects an earlier answer instead of asking again: a result already
// recorded, a denial, an approval still pending (Await it) or granted
// (Attach its run and execute it there). The lookup is a read; it decides
// nothing, and a step it finds is executed only through its own run.
func (g *Gate) Lookup(ctx context.Context, key string, limit int) ([]RequestRecord, error) {
	if len(key) != sha256.Size*2 {
		return nil, fmt.Errorf("%w: a request key is %d hex digits, got %d characters", ErrInvalidConfig, sha256.Size*2, len(key))
	}
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, MaxLookup)
	steps, err := g.e.store.StepsByRequestKey(ctx, key, limit)
	if err != nil {
		return nil, err
	}
	out := make([]RequestRecord, len(steps))
	apps := map[string][]Approval{}
	for i, st := range steps {
		out[i].Step = st
		list, ok := apps[st.RunID]
		if !ok {
			if list, err = g.e.store.ListApprovals(ctx, st.RunID); err != nil {
				return nil, err
			}
			apps[st.RunID] = list
		}
		for k := range list {
			if list[k].StepID == st.ID {
				a := list[k]
				out[i].Approval = &a
			}
		}
	}
	return out, nil
}
