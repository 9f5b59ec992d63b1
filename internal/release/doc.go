// Package release cuts agentrt releases and proves them before anything is
// published. agentrt is one repository of several modules released in
// lockstep: the core and its nested modules (go.work lists them all), every
// published one tagged at the same version (v1.2.3, proxy/v1.2.3, ...).
//
// The package reads the workspace (which modules, which binaries under
// cmd/), stamps a copy of the tree as a version (every requirement on one of
// our modules set to it, the go.sum lines for those modules computed from
// the zips a module proxy would serve), and writes a file-based module proxy
// holding those zips, so that `go install …@version` and a GOWORK=off build
// of every module can run before a tag exists. The releasetool command runs
// it for the Makefile, .ci and scripts/release.sh.
//
// It is its own module (github.com/agentrt/agentrt/internal/release) so that
// the core keeps its dependencies lean; under internal/ it is never
// published.
package release
