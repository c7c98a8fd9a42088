#!/bin/sh
# run-with-pg.sh - runs a command against a throwaway PostgreSQL: initdb in a temp dir, a
# server on a Unix socket there (no TCP), one fresh database, CARDPOST_TEST_PG set to its
# postgresql:// address; the server stopped and the dir removed at the end, whatever the
# command did. Usage: run-with-pg.sh COMMAND [ARG...]; exits with the command's status.
# PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user
# (Debian's package creates it) and runs as it.
set -eu

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "run-with-pg.sh: no PostgreSQL server (apt-get install postgresql)" >&2
    exit 77 # meson: skipped
fi

dir=$(mktemp -d /tmp/cardpost-pg.XXXXXX)
as_owner() { "$@"; }
if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    as_owner() { runuser -u postgres -- "$@"; }
fi

stop() {
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT INT TERM

as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
# fsync off: a test cluster, thrown away after the run. Lock waits past deadlock_timeout
# (1 s) are logged, and shown with the deadlocks when the command fails (below).
as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-k $dir -c listen_addresses= -c fsync=off -c full_page_writes=off -c log_lock_waits=on" \
    start >/dev/null ||
    { cat "$dir/server.log" >&2; exit 1; }
as_owner "$bindir/createdb" -h "$dir" -U postgres cardpost_test

CARDPOST_TEST_PG="postgresql:///cardpost_test?host=$dir&user=postgres"
export CARDPOST_TEST_PG
set +e
"$@"
status=$?
if [ "$status" != 0 ] && [ "$status" != 77 ]; then
    # The server's side of a failure (its log goes with the temp dir): waits and deadlocks.
    grep -E -A3 'deadlock detected|still waiting|acquired .* after|canceling autovacuum|PANIC|FATAL' \
        "$dir/server.log" 2>/dev/null | tail -n 40 | sed 's/^/postgres: /'
fi
exit $status
