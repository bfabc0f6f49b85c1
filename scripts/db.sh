#!/usr/bin/env bash
# The project's private MariaDB: up | down | status | url [--admin] | sql [--admin] [client args].
#
# `up` installs the Debian packages the project needs (only those missing), initialises a data
# directory under var/mariadb (never touching a system-wide server), starts mariadbd on a socket
# there and on a loopback port, creates the database and two accounts, and prints DATABASE_URL.
# When DATABASE_URL is already set, `up` only checks that it answers. `sql` runs the mariadb
# client on the database, e.g. `scripts/db.sh sql < conf/admin.sql`, without a password on
# the command line.
#
# Environment: FOCUSER_DB_PORT (default 3407), FOCUSER_DB_NAME (default focuser),
# FOCUSER_VAR (default <repo>/var), FOCUSER_DB_START_TIMEOUT (seconds, default 60),
# FOCUSER_DB_POOL (InnoDB buffer pool, default 1G; read at start-up),
# DATABASE_URL (use that server instead), FOCUSER_ADMIN_DATABASE_URL (its admin account).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VAR=${FOCUSER_VAR:-$ROOT/var}
DB_DIR=$VAR/mariadb
DATA=$DB_DIR/data
SOCK=$DB_DIR/mariadbd.sock
PIDFILE=$DB_DIR/mariadbd.pid
LOG=$DB_DIR/error.log
SECRETS=$DB_DIR/credentials
PORT=${FOCUSER_DB_PORT:-3407}
DB_NAME=${FOCUSER_DB_NAME:-focuser}
START_TIMEOUT=${FOCUSER_DB_START_TIMEOUT:-60}
OS_USER=$(id -un)
PACKAGES=(mariadb-server mariadb-client libmariadb-dev-compat libcurl4-openssl-dev pkg-config)

say() { printf 'db: %s\n' "$*" >&2; }
die() { printf 'db: error: %s\n' "$*" >&2; exit 1; }

# shellcheck source=lib/packages.sh
. "$ROOT/scripts/lib/packages.sh"

# shellcheck source=lib/mariadb.sh
. "$ROOT/scripts/lib/mariadb.sh"

# --- DATABASE_URL handling ---------------------------------------------------------------------

check_url() {
    local url=$1 opts out rc=0
    parse_url "$url"
    opts=$(client_options)
    out=$(timeout 8 mariadb --defaults-extra-file="$opts" ${URL_DB:+"$URL_DB"} -N -e 'SELECT 1' 2>&1) || rc=$?
    rm -f "$opts"
    [ $rc -eq 0 ] || die "DATABASE_URL $(masked "$url") does not answer: ${out:-timed out after 8 s}"
}

# --- the private server ------------------------------------------------------------------------

root_sql() { mariadb --no-defaults --socket="$SOCK" -u "$OS_USER" --connect-timeout=5 "$@"; }

server_pid() {
    [ -s "$PIDFILE" ] || return 1
    local pid
    pid=$(cat "$PIDFILE")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

answers() { mariadb-admin --no-defaults --socket="$SOCK" -u "$OS_USER" --connect-timeout=2 ping >/dev/null 2>&1; }

port_taken() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; }

log_tail() { [ -f "$LOG" ] && { echo "--- last lines of $LOG:"; tail -n 25 "$LOG"; } >&2 || true; }

daemon_url() { echo "mysql://focuser:$DAEMON_PASSWORD@127.0.0.1:$PORT/$DB_NAME"; }
admin_url() { echo "mysql://focuser_admin:$ADMIN_PASSWORD@127.0.0.1:$PORT/$DB_NAME"; }

start_server() {
    rm -f "$SOCK" "$PIDFILE"
    mkdir -p "$DB_DIR/tmp"
    say "starting mariadbd on 127.0.0.1:$PORT (socket $SOCK)"
    setsid /usr/sbin/mariadbd --no-defaults --basedir=/usr --datadir="$DATA" --tmpdir="$DB_DIR/tmp" \
        --socket="$SOCK" --port="$PORT" --bind-address=127.0.0.1 --pid-file="$PIDFILE" \
        --log-error="$LOG" --user="$OS_USER" "${SERVER_OPTIONS[@]}" \
        --innodb-buffer-pool-size="${FOCUSER_DB_POOL:-1G}" \
        </dev/null >>"$DB_DIR/mariadbd.out" 2>&1 &
    local pid=$! waited=0
    while ! answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log_tail
            grep -q 'Address already in use' "$LOG" 2>/dev/null &&
                die "mariadbd could not bind port $PORT: the port is taken"
            die "mariadbd exited during start-up"
        fi
        if [ $waited -ge $((START_TIMEOUT * 4)) ]; then
            kill "$pid" 2>/dev/null || true
            log_tail
            die "mariadbd did not answer within ${START_TIMEOUT} s"
        fi
        sleep 0.25
        waited=$((waited + 1))
    done
}

create_accounts() { accounts_sql "$DB_NAME" | root_sql || die "could not create the database and accounts"; }

cmd_up() {
    if [ -n "${DATABASE_URL:-}" ]; then
        install_packages mariadb-client libmariadb-dev-compat libcurl4-openssl-dev pkg-config
        check_url "$DATABASE_URL"
        say "DATABASE_URL $(masked "$DATABASE_URL") answers; leaving it as it is"
        echo "DATABASE_URL=$DATABASE_URL"
        return 0
    fi
    install_packages "${PACKAGES[@]}"
    mkdir -p "$DB_DIR"
    load_secrets "$SECRETS"
    if server_pid >/dev/null && answers; then
        say "already running (pid $(server_pid)) on 127.0.0.1:$PORT"
        create_accounts # idempotent; brings the grants of an older checkout up to date
    else
        if server_pid >/dev/null; then
            log_tail
            die "mariadbd (pid $(server_pid)) is running but does not answer on $SOCK"
        fi
        port_taken && die "port $PORT on 127.0.0.1 is taken by another process; set FOCUSER_DB_PORT to another port"
        mkdir -p "$DB_DIR/tmp"
        init_datadir "$DATA" "$DB_DIR/install.log" "$OS_USER"
        start_server
        create_accounts
    fi
    echo "DATABASE_URL=$(daemon_url)"
}

cmd_down() {
    local pid
    if ! pid=$(server_pid); then
        say "not running"
        return 0
    fi
    stop_server "$SOCK" "$pid" mariadbd
}

cmd_status() {
    if [ -n "${DATABASE_URL:-}" ]; then
        check_url "$DATABASE_URL"
        echo "external server $(masked "$DATABASE_URL"): answers"
        return 0
    fi
    local pid
    if pid=$(server_pid) && answers; then
        echo "running: pid $pid, 127.0.0.1:$PORT, socket $SOCK, data $DATA"
        return 0
    fi
    echo "not running (data $DATA)"
    return 3
}

cmd_url() {
    local admin=0
    [ "${1:-}" = "--admin" ] && admin=1
    if [ -n "${DATABASE_URL:-}" ]; then
        if [ $admin -eq 1 ]; then echo "${FOCUSER_ADMIN_DATABASE_URL:-$DATABASE_URL}"; else echo "$DATABASE_URL"; fi
        return 0
    fi
    [ -s "$SECRETS" ] || die "the private server was never set up; run: scripts/db.sh up"
    load_secrets "$SECRETS"
    if [ $admin -eq 1 ]; then admin_url; else daemon_url; fi
}

# The mariadb client on the database of `url`, credentials in a private options file.
cmd_sql() {
    local which=()
    if [ "${1:-}" = "--admin" ]; then which=(--admin); shift; fi
    local url
    url=$(cmd_url "${which[@]}")
    url_client "$url" "$@"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    url) shift; cmd_url "$@" ;;
    sql) shift; cmd_sql "$@" ;;
    *) echo "usage: $0 up | down | status | url [--admin] | sql [--admin] [client args]" >&2; exit 2 ;;
esac
