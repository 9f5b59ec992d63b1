package postgres

import (
	"context"

	agentrt "github.com/agentrt/agentrt"
)

var _ agentrt.Eraser = (*Store)(nil)

// erasedTables are the tables erasure rewrites.
var erasedTables = []string{"events", "steps", "approvals", "model_calls", "runs", "run_salts"}

// Vacuum runs VACUUM FULL on the tables erasure changes. Until it runs,
// the row versions an erasure replaced, content included, stay in the
// table files (and in the write-ahead log, replicas and backups until
// those are recycled); VACUUM FULL rewrites each table without them, under
// an exclusive lock while it does.
func (s *Store) Vacuum(ctx context.Context) error {
	for _, t := range erasedTables {
		if _, err := s.pool.Exec(ctx, "VACUUM FULL "+t); err != nil {
			return err
		}
	}
	return nil
}
