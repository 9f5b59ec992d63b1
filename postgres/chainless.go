package postgres

import "github.com/agentrt/agentrt/internal/sqlstore"

// ChainlessForBenchmarks makes every store of this process commit events
// with no hash chain at all. It exists only for the ceiling variant of
// BenchmarkWorkerProcesses (the same processes committing the same rows
// unchained); a store opened after it writes events verify refuses.
func ChainlessForBenchmarks() { sqlstore.ChainlessForBenchmarks() }
