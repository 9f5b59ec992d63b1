// Package adaptertest is the test rig the framework adapters
// (adapters/adk, adapters/eino, adapters/genkit, adapters/trpcagent)
// share: the note file their tools work on with the tools' classes,
// arguments and bodies, an observer that signals each event type, the
// part of a rig every framework has (Runs) with the approve, restart and
// crash checks the adapters' tests tell alike, the real agentrt binary
// built from this checkout, a SIGKILL child process, a store that counts
// its synced commits, the benchmarks' governed gate and timed loop, and
// the commit floor measured on the same driver.
//
// It is a public package because each adapter is a module of its own and
// cannot import this one's internal packages. It is for tests: it fails
// the test it is handed rather than returning errors.
package adaptertest
