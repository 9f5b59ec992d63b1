// Package buildinfo names the version an agentrt binary was built as, for
// every binary's `version` command. A release build stamps it at link time:
//
//	go build -ldflags "-X github.com/agentrt/agentrt/internal/buildinfo.stamp=v1.2.3" ./cmd/agentrt
//
// A binary built with `go install …@v1.2.3` carries the module version in
// its build information instead. The nested modules' binaries import this
// package too: Go's internal rule goes by import path, and the modules are
// released in lockstep (docs/decisions/0012-cutting-a-release.md).
package buildinfo

import "runtime/debug"

// stamp is what make release writes in (the -X flag above): the tag a
// release is built from, or its commit. Empty in any other build.
var stamp string

// Version is the release stamp, else the version of the main module the
// binary was built from (set by `go install pkg@version`), else "devel".
func Version() string {
	if stamp != "" {
		return stamp
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
