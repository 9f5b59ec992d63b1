package agentrt_test

import (
	"path/filepath"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/enginetest"
	"github.com/agentrt/agentrt/sqlite"
)

// The engine's behaviour suite on SQLite; the postgres module runs the same
// suite on a real cluster (TestEngine_Suite there).
func TestEngine_Suite(t *testing.T) {
	enginetest.Exercise(t, func(t *testing.T) func(*testing.T) agentrt.Store {
		path := filepath.Join(t.TempDir(), "runs.db")
		return func(t *testing.T) agentrt.Store {
			st, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
	})
}
