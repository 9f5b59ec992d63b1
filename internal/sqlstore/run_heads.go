package sqlstore

import (
	"context"
)

// RunHead is the newest event of one run's chain (schema version 9 on):
// its place in the run, its seq and its hash. What a checkpoint or a
// kept copy folds to vouch for every run's chain at once.
type RunHead struct {
	RunID string
	Place int64
	Seq   int64
	Hash  string
}

// RunHeads reads the heads of the runs whose ids sort after afterRun
// (byte order), at most limit of them, in that order: a page of every
// run's chain head. Runs with no event since the per-run chains began
// have none.
func (s *Store) RunHeads(ctx context.Context, afterRun string, limit int) ([]RunHead, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(`SELECT e.run_id, e.run_seq, e.seq, substr(e.hash, 1, 128) FROM events e
		JOIN (SELECT run_id, MAX(run_seq) AS n FROM events WHERE run_seq > 0 AND run_id`+s.d.ByteOrder+` > ?
			GROUP BY run_id ORDER BY run_id`+s.d.ByteOrder+` LIMIT ?) h ON e.run_id = h.run_id AND e.run_seq = h.n
		ORDER BY e.run_id`+s.d.ByteOrder), afterRun, limit)
	return scanRows(rows, err, func(sc scanner) (RunHead, error) {
		var h RunHead
		err := sc.Scan(&h.RunID, &h.Place, &h.Seq, &h.Hash)
		return h, err
	})
}
