# ops/lib/pg.sh - sourced by ops/run (--postgres) and ops/bench-service (--db postgres): a
# local PostgreSQL server of Debian's `postgresql` package in a directory of our own, the way
# tests/pg/run-with-pg.sh makes the tests' clusters: initdb there on first use, the server on
# a Unix socket in that directory (no TCP port, nothing else on the machine touched), trust
# authentication for the `postgres` role (only who can reach the directory can connect), no
# root password anywhere. PostgreSQL refuses to run as root: as root, the directory belongs
# to the `postgres` user that Debian's package creates, and the server runs as it.
#   pg_start DIR [OPTION...]   initdb DIR/data unless there, then start the server (OPTIONs:
#                              more `-c name=value` for it); its log is DIR/server.log
#   pg_stop DIR                stop it (fast: the sessions are ended, the data kept)
#   pg_createdb DIR NAME       create database NAME unless it exists: true if it created it
#   pg_dropdb DIR NAME         drop database NAME (if it exists)
#   pg_url DIR NAME            the postgresql:// address cardpostd takes for NAME

pg_bindir() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_start() {
    local dir=$1 bin
    shift
    bin=$(pg_bindir)
    if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
        echo "pg_start: no PostgreSQL server (apt-get install postgresql)" >&2
        return 1
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    chmod 700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 \
            >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
    fi
    local opts="-k $dir -c listen_addresses=" o
    for o in "$@"; do opts="$opts $o"; done
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "$opts" start \
        >/dev/null || { tail -n 20 "$dir/server.log" >&2; return 1; }
}

pg_stop() {
    local dir bin
    dir=$(cd "$1" && pwd)
    bin=$(pg_bindir)
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

pg_createdb() {
    local dir bin
    dir=$(cd "$1" && pwd)
    bin=$(pg_bindir)
    if pg_as_owner "$bin/psql" -h "$dir" -U postgres -d postgres -Atc \
        "SELECT 1 FROM pg_database WHERE datname = '$2'" | grep -q 1; then
        return 1
    fi
    pg_as_owner "$bin/createdb" -h "$dir" -U postgres "$2"
}

pg_dropdb() {
    local dir bin
    dir=$(cd "$1" && pwd)
    bin=$(pg_bindir)
    pg_as_owner "$bin/dropdb" -h "$dir" -U postgres --if-exists "$2"
}

pg_url() {
    local dir
    dir=$(cd "$1" && pwd)
    echo "postgresql:///$2?host=$dir&user=postgres"
}
