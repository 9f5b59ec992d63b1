#!/usr/bin/env bash
# Prepares release VERSION of every agentrt module, in lockstep
# (docs/decisions/0012-cutting-a-release.md):
#
#   scripts/release.sh vX.Y.Z
#
# On a clean checkout it sets every requirement of one of our modules on
# another to VERSION (go.mod), writes VERSION's hashes of our modules into
# every go.sum (computed from the zips a module proxy will serve once the
# tags exist), points go.work's replace lines and the README's install lines
# at VERSION, then proves the result before anything is published: every
# module tidy, built and vetted with GOWORK=off, and `go install` of every
# binary at VERSION from a local module proxy (internal/release's
# TestRelease_ tests). It commits nothing and tags nothing: it prints the
# commit and the tags to push, one per published module (vX.Y.Z,
# proxy/vX.Y.Z, ...). Set RELEASE_NO_PROVE=1 to stamp without the proof.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

die() { echo "release: $*" >&2; exit 1; }

version=${1:-}
[ $# -eq 1 ] || die "usage: scripts/release.sh vX.Y.Z"
[[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]] ||
	die "$version is not a release version: want vX.Y.Z, e.g. v0.2.0"
[ -z "$(git status --porcelain)" ] ||
	die "the checkout has uncommitted changes; a release is cut from a clean commit, so commit or stash them first"

tool=(go run ./internal/release/releasetool)
current=$("${tool[@]}" version)
# sort -V orders v0.10.0 after v0.9.0; the new version may equal the
# current one only for the first release, which nothing has tagged yet.
if [ "$version" != "$current" ]; then
	newest=$(printf '%s\n%s\n' "$current" "$version" | sort -V | tail -n 1)
	[ "$newest" = "$version" ] || die "$version is older than $current, the version the modules require now"
fi
if git rev-parse -q --verify "refs/tags/$version" > /dev/null; then
	die "tag $version exists already"
fi

echo "== stamping every module as $version (was $current)"
"${tool[@]}" stamp -version "$version"

if [ "${RELEASE_NO_PROVE:-}" != 1 ]; then
	echo "== proving $version: every module alone, go install of every binary from a local proxy"
	(cd internal/release && go test -count=1 -run '^TestRelease_' .)
fi

mapfile -t tags < <("${tool[@]}" tags -version "$version")
echo "== $version is stamped. Review the diff, then commit, tag that commit and push:"
echo "git commit -am 'Release $version'"
for t in "${tags[@]}"; do
	echo "git tag -a $t -m 'agentrt $version'"
done
echo "git push origin ${tags[*]}"
echo "== tags"
printf '%s\n' "${tags[@]}"
