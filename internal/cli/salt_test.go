package cli

import "github.com/agentrt/agentrt/sqlite"

// The golden files hold chain hashes, which are keyed by each run's salt:
// this package's tests draw salts from a fixed stream so the hashes are
// the same on every run.
func init() { sqlite.SetSaltSource(fixedSalts{}) }

type fixedSalts struct{}

func (fixedSalts) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i)
	}
	return len(p), nil
}
