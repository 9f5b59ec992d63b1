#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests.
#
#   scripts/pg-test.sh run -- CMD...   start a cluster, run CMD with TEST_PG_DSN
#                                      (and TEST_PG_BIN, TEST_PG_DATA; the
#                                      server logs to DATA/../server.log) set, then
#                                      stop and remove the cluster; exits with
#                                      CMD's status (with TEST_PG_DSN set
#                                      already, it just runs CMD)
#   scripts/pg-test.sh start           start one and print `export ...` lines
#   scripts/pg-test.sh stop DIR        stop and remove the cluster in DIR
#
# It finds initdb and pg_ctl (PATH, then Debian's /usr/lib/postgresql/*/bin),
# installing the postgresql package with apt-get only when they are absent.
# As root it runs the server as the postgres user. The server listens on
# 127.0.0.1 on a free port, with its socket in a private temporary
# directory, and trusts local connections (except the role agentrt_pw, which
# must give its password, for the tests of a wrong one): it is for tests only.
set -euo pipefail

die() { echo "pg-test: $*" >&2; exit 1; }

find_bin() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return 0
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

pg_bin() {
	local bin
	if bin=$(find_bin); then
		echo "$bin"
		return 0
	fi
	[ "$(id -u)" = 0 ] || die "initdb is not installed; install PostgreSQL (Debian: apt-get install -y postgresql)"
	echo "pg-test: initdb not found; installing postgresql with apt-get" >&2
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
	find_bin || die "postgresql installed, but initdb is still not found"
}

# as_pg runs a command as the account that owns the cluster.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

free_port() {
	# Ask the kernel for a free port; the tiny race before the server binds
	# it is retried by start.
	python3 - <<'EOF' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

start() {
	local bin dir port i
	bin=$(pg_bin)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/agentrt-pg.XXXXXX")
	mkdir -p "$dir/data" "$dir/sock"
	chmod 700 "$dir" "$dir/sock"
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || die "running as root, but there is no postgres account to run the server as"
		chown -R postgres: "$dir"
	fi
	as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
	echo "include = '$dir/agentrt.conf'" >>"$dir/data/postgresql.conf"
	# One role must give its password, over TCP, so tests can see a wrong
	# one refused (everyone else is trusted): the first matching line wins.
	{ echo "host all agentrt_pw 127.0.0.1/32 scram-sha-256"; cat "$dir/data/pg_hba.conf"; } >"$dir/hba.tmp"
	mv "$dir/hba.tmp" "$dir/data/pg_hba.conf"
	if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/data/pg_hba.conf"; fi
	for i in 1 2 3 4 5; do
		port=$(free_port)
		# The settings go in the cluster's own config, so a plain
		# `pg_ctl -D DATA -l LOG start` (a test restarting the cluster)
		# starts it as it was.
		printf "%s\n" "listen_addresses = '127.0.0.1'" "port = $port" "unix_socket_directories = '$dir/sock'" \
			"max_connections = 300" "fsync = on" "synchronous_commit = on" >"$dir/agentrt.conf"
		if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/agentrt.conf"; fi
		if as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start >/dev/null 2>&1; then
			echo "$bin" >"$dir/bin"
			echo "$port" >"$dir/port"
			PG_DIR=$dir
			PG_PORT=$port
			PG_BINDIR=$bin
			return 0
		fi
	done
	cat "$dir/server.log" >&2 || true
	rm -rf "$dir"
	die "the server would not start"
}

stop() {
	local dir=$1 bin
	[ -d "$dir" ] || return 0
	[ -f "$dir/data/PG_VERSION" ] || die "$dir is not a cluster this script made"
	bin=$(cat "$dir/bin" 2>/dev/null || pg_bin)
	as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}

dsn() { echo "postgres://postgres@127.0.0.1:$1/postgres?sslmode=disable"; }

case "${1:-}" in
run)
	shift
	[ "${1:-}" = "--" ] && shift
	[ $# -gt 0 ] || die "usage: $0 run -- CMD..."
	if [ -n "${TEST_PG_DSN:-}" ]; then
		# A cluster is already named: use it.
		exec "$@"
	fi
	start
	trap 'stop "$PG_DIR"' EXIT
	trap 'exit 130' INT TERM
	echo "pg-test: PostgreSQL ($PG_BINDIR) on 127.0.0.1:$PG_PORT, data in $PG_DIR" >&2
	set +e
	TEST_PG_DSN=$(dsn "$PG_PORT") TEST_PG_BIN=$PG_BINDIR TEST_PG_DATA=$PG_DIR/data "$@"
	code=$?
	set -e
	exit $code
	;;
start)
	start
	echo "export TEST_PG_DSN='$(dsn "$PG_PORT")'"
	echo "export TEST_PG_BIN='$PG_BINDIR'"
	echo "export TEST_PG_DATA='$PG_DIR/data'"
	echo "# stop with: $0 stop $PG_DIR"
	;;
stop)
	[ $# -eq 2 ] || die "usage: $0 stop DIR"
	stop "$2"
	;;
*)
	die "usage: $0 run -- CMD... | start | stop DIR"
	;;
esac
