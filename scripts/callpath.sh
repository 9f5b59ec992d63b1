#!/usr/bin/env bash
# The proxied call's path (issue 38's target: at most 9 files and 20
# returns to a file already left): traces three real calls through the
# proxy's own tests with Delve, then walks each with internal/house's
# WalkCallPath. Prints one line per call, from the MCP tool handler
# (serveCall) and from the call's own path (handle). `make callpath`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dlv_version=v1.27.2
tools=${XDG_CACHE_HOME:-$HOME/.cache}/agentrt-tools/dlv-$dlv_version
if [[ ! -x $tools/dlv ]]; then
	GOBIN=$tools GOFLAGS= go install "github.com/go-delve/delve/cmd/dlv@$dlv_version"
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mod=github.com/agentrt/agentrt/proxy
trace() { # test name, trace file
	(cd "$root/proxy" && "$tools/dlv" trace --test . "^$mod" --stack 0 -- -test.run "^$1\$" -test.count=1) >"$2" 2>&1
	grep -q '^PASS' "$2" || { echo "callpath: $1 did not pass under dlv; its trace is $2" >&2; trap - EXIT; exit 1; }
}
trace TestProxy_AllowedCallCommitsAtMostTwice "$tmp/read.txt"
trace TestProxy_ApprovalRoundTrip "$tmp/write.txt"
for from in '(*Proxy).serveCall.func1' '(*Proxy).handle'; do
	for c in "read 1 an allowed read" "write 1 a write held for approval" "write 3 the approved write, run"; do
		set -- $c; file=$1 n=$2; shift 2
		printf '%-34s from %-24s %s\n' "$*" "$from:" \
			"$(cd "$root" && go run ./internal/house/callpath -root proxy -mod "$mod" -entry "$mod.$from" -n "$n" "$tmp/$file.txt")"
	done
done
