// Package house measures the house rules of an agentrt checkout: files of
// at most 700 lines and functions of at most 80 (the way
// /work/shared/tools/shape.sh counts them), every package directory named
// in docs/architecture.md's code map, the root package's layering, and the
// duplicate-pair count with import blocks blanked (the way
// /work/shared/tools/dups.sh counts it).
//
// The rules themselves are the tests of this package, each against a
// checked-in allowlist under testdata/allow that may only shrink; `go test
// ./internal/house -update` rewrites the allowlists (see house_test.go).
// `make dups` runs the program in ./dups (not under a cmd/ directory, so
// no release ships it), which prints the duplicate-pair figure CI
// shows.
package house
