#!/usr/bin/env bash
# Regenerate docs/status.md from docs/status.md.in: a row is "verified" when a
# test or fuzz target of that name is defined in the tree, "open" otherwise.
# CI runs every test; a defined test that fails fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
defined=$(grep -rhoE '^func (Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]+' --include='*_test.go' . | sed 's/^func //' | sort -u)
while IFS= read -r line; do
	if [[ "$line" == *"| @ |"* ]]; then
		name=$(awk -F'|' '{gsub(/ /,"",$4); print $4}' <<<"$line")
		if grep -qx "$name" <<<"$defined"; then
			line=${line/| @ |/| verified |}
		else
			line=${line/| @ |/| open |}
		fi
	fi
	printf '%s\n' "$line"
done < docs/status.md.in > docs/status.md
