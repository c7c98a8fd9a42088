# ops/lib/packages.sh - sourced by the ops/ scripts: installs Debian packages that are
# missing (apt-get, through sudo unless already root; `apt-get update` at most once).
#   install_missing PKG...   installs those of PKG that dpkg does not list as installed
#   installed PKG            true if PKG is installed
#   apt_update_once          `apt-get update`, the first time only
export DEBIAN_FRONTEND=noninteractive

# Packages the service needs to build and run (ops/run); ops/test adds clang for the fuzzers.
# libpq-dev: the PostgreSQL backend's client library (storage/postgres/).
CARDPOST_RUNTIME_PACKAGES=(meson ninja-build gcc pkg-config libjansson-dev libssl-dev
    libsqlite3-dev libpq-dev libmicrohttpd-dev libcurl4-openssl-dev libcmocka-dev
    libgmime-3.0-dev python3)
# What the tests need beyond that (ops/test): the SMTP server of tests/peers/smtp_sink.py;
# nginx and openssl for the reverse proxy example (tests/e2e/test_proxy.py); systemd's
# systemd-analyze for the units (tests/e2e/test_install.py); prometheus for its `promtool
# check metrics` on a scrape of GET /metrics (tests/e2e/test_metrics.py); jsonschema for
# checking every end-to-end answer against docs/openapi.json (tests/e2e/apidoc.py);
# postgresql for the throwaway clusters the storage tests and the end-to-end suite run on a
# second time (tests/pg/run-with-pg.sh: store_pg, ..., e2e_*_pg); python3-psycopg2 for the
# end-to-end tests that reach under the API into a PostgreSQL database (harness.db_exec).
CARDPOST_TEST_PACKAGES=(python3-aiosmtpd python3-jsonschema nginx openssl systemd prometheus
    postgresql python3-psycopg2)
# What `ops/run --postgres` and `ops/bench-service --db postgres` add: the server of their
# throwaway cluster (ops/lib/pg.sh).
CARDPOST_POSTGRES_PACKAGES=(postgresql)
# What ops/bench-service adds for its notification rows: the peers' SMTP server (above) and
# the sqlite3 shell, to count the outbox after a run.
CARDPOST_BENCH_PACKAGES=(sqlite3)
# What the browser tests (tests/browser/) add for ops/test: Chromium and node; npm (for
# playwright-core) is the Debian package `npm` unless the installed nodejs brings its own.
CARDPOST_BROWSER_TEST_PACKAGES=(chromium nodejs)
install_npm() { command -v npm >/dev/null 2>&1 || install_missing npm; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    else
        sudo env DEBIAN_FRONTEND=noninteractive "$@"
    fi
}
installed() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }
apt_updated=false
apt_update_once() {
    if ! $apt_updated; then
        as_root apt-get update -q
        apt_updated=true
    fi
}
install_missing() {
    local missing=() p
    for p in "$@"; do
        installed "$p" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        printf '\n=== %s\n' "installing ${missing[*]}"
        apt_update_once
        as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}
