#!/usr/bin/env bash
# postgres-test.sh: make sure a throwaway PostgreSQL cluster for tests is running on
# 127.0.0.1 and print its URL on stdout (everything else goes to stderr).
#
#   export ASTER_TEST_POSTGRES_URL="$(scripts/postgres-test.sh)"
#   go test ./internal/store/ ./internal/app/
#
# Idempotent: a cluster already running is reused; a missing one is created with initdb
# under $ASTER_PG_DIR (default /tmp/aster-pgtest), owned by the postgres user, listening
# on 127.0.0.1:$ASTER_PG_PORT (default 54329) only, trust auth for local TCP. Installs
# Debian's postgresql package when no server binaries are found (needs root).
#   scripts/postgres-test.sh stop   stops the cluster (the data directory stays).
set -euo pipefail

PGDIR="${ASTER_PG_DIR:-/tmp/aster-pgtest}"
PORT="${ASTER_PG_PORT:-54329}"
DB="aster_test"
URL="postgres://postgres@127.0.0.1:${PORT}/${DB}?sslmode=disable"
log() { echo "postgres-test: $*" >&2; }

find_bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		[[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
	done
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		dirname "$(command -v initdb)"
		return 0
	fi
	return 1
}

BINDIR="$(find_bindir || true)"
if [[ -z "$BINDIR" ]]; then
	if [[ $(id -u) -ne 0 ]]; then
		log "no PostgreSQL server binaries and not root: install the postgresql package"
		exit 1
	fi
	log "installing postgresql (Debian package)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql >&2
	BINDIR="$(find_bindir)"
fi

# Run a server binary as the postgres user when we are root (initdb refuses root).
as_pg() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

if [[ "${1:-}" == "stop" ]]; then
	if [[ -f "$PGDIR/data/postmaster.pid" ]]; then
		as_pg "$BINDIR/pg_ctl" -D "$PGDIR/data" -m fast -w stop >&2 || true
	fi
	exit 0
fi

ready() { "$BINDIR/pg_isready" -q -h 127.0.0.1 -p "$PORT" 2>/dev/null; }

if ! ready; then
	if [[ ! -s "$PGDIR/data/PG_VERSION" ]]; then
		log "creating a cluster in $PGDIR/data"
		mkdir -p "$PGDIR"
		[[ $(id -u) -eq 0 ]] && chown postgres:postgres "$PGDIR"
		chmod 700 "$PGDIR"
		as_pg "$BINDIR/initdb" -D "$PGDIR/data" -U postgres --auth-host=trust --auth-local=trust \
			-E UTF8 --locale=C.UTF-8 >"$PGDIR/initdb.log" 2>&1 || {
			cat "$PGDIR/initdb.log" >&2
			exit 1
		}
	fi
	# A stale pid file from a killed server would stop pg_ctl start.
	if [[ -f "$PGDIR/data/postmaster.pid" ]] && ! as_pg "$BINDIR/pg_ctl" -D "$PGDIR/data" status >/dev/null 2>&1; then
		rm -f "$PGDIR/data/postmaster.pid"
	fi
	log "starting on 127.0.0.1:$PORT"
	as_pg "$BINDIR/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w -t 60 start \
		-o "-c listen_addresses=127.0.0.1 -p $PORT -k $PGDIR -c fsync=off -c max_connections=200" >&2 || {
		tail -n 30 "$PGDIR/server.log" >&2 || true
		exit 1
	}
fi
for _ in $(seq 1 50); do ready && break; sleep 0.2; done
ready || { log "server did not become ready"; exit 1; }

if ! "$BINDIR/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$DB'" postgres | grep -q 1; then
	"$BINDIR/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE DATABASE $DB" postgres >&2
fi
echo "$URL"
