package cli

import (
	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
)

// openReader opens the database named by -db read-only through the
// backend registry and returns it with the name it may be printed by.
func (e *env) openReader(db string) (agentrt.Store, string, int) {
	st, code := e.open(db, true)
	return st, backend.Redact(db), code
}
