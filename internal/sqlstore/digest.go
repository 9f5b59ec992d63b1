package sqlstore

import (
	"encoding/hex"

	agentrt "github.com/agentrt/agentrt"
)

// disclosureDomain separates a disclosed value's digest from a payload's:
// no payload begins with a NUL-terminated word.
const disclosureDomain = "agentrt disclosure\x00"

// KeyedDigest digests a value a disclosure rule found, under runID's salt
// (agentrt.KeyedDigester). A run without a salt gets no digest: an
// unkeyed hash of a secret would confirm a guess of it.
func (t *tx) KeyedDigest(runID string, value []byte) (string, error) {
	k, err := t.saltFor(runID, agentrt.EventDisclosureApplied)
	if err != nil || k == nil {
		return "", err
	}
	d := k.payloadDigest(append([]byte(disclosureDomain), value...))
	return hex.EncodeToString(d[:]), nil
}

var _ agentrt.KeyedDigester = (*tx)(nil)
