#!/usr/bin/env bash
# The README's run command: the whole pipeline on this machine, as an operator would run it.
#
#   scripts/run.sh            set up, start, feed a reflog, wait, check, print a summary; then
#                             keep the daemons running until Ctrl-C
#   scripts/run.sh --cluster  the same with every database (the master's and the nodes') on the
#                             private Galera cluster (scripts/cluster.sh) instead of db.sh's server
#   scripts/run.sh --stop     stop the daemons of a run started elsewhere (another terminal)
#
# It installs what is missing, brings the private MariaDB up (scripts/db.sh), builds master,
# yacobot, reader and the driver (tests/src/bin/focuser-run.rs), and hands over to
# `focuser-run up`: empty migrated databases (one for the master, one per crawler node) with
# the sample in them, a sample web on loopback, a sample classifier model trained with
# `yacobot train` from multidoc/corpus/tgcontest/ (page analysis: every yacobot runs with
# MultiDoc.Enable = 1 and that model), config files made from conf/ under var/run-main/,
# every daemon started through conf/init.d/focuser, and a 100 000-line reflog dropped into
# the master's incoming directory.
#
# Environment: FOCUSER_RUN_DIR (default var/run-main), FOCUSER_PROFILE (dev or release,
# default dev), FOCUSER_RUN_ARGS (more `focuser-run up` options, e.g. "--lines 20000" or
# "--no-multidoc"),
# and scripts/db.sh's (FOCUSER_DB_PORT, DATABASE_URL, ...) or with --cluster scripts/cluster.sh's
# (FOCUSER_CLUSTER_PORT, ...).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
RUN_DIR=${FOCUSER_RUN_DIR:-$ROOT/var/run-main}
PROFILE=${FOCUSER_PROFILE:-dev}
TARGET=${CARGO_TARGET_DIR:-target}
case $PROFILE in
    dev) BIN=$TARGET/debug ;;
    release) BIN=$TARGET/release ;;
    *) echo "run.sh: FOCUSER_PROFILE is dev or release, not $PROFILE" >&2; exit 2 ;;
esac
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

step() { printf '\n=== %s\n' "$*"; }
say() { printf 'run.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lib/packages.sh
. scripts/lib/packages.sh

driver() { "$BIN/focuser-run" --dir "$RUN_DIR" "$@"; }

if [ "${1:-}" = "--stop" ]; then
    [ -x "$BIN/focuser-run" ] || die "$BIN/focuser-run is not built: nothing was started with FOCUSER_PROFILE=$PROFILE"
    [ -f "$RUN_DIR/plan.json" ] || die "no run in $RUN_DIR"
    driver stop
    exit
fi
CLUSTER=0
if [ "${1:-}" = "--cluster" ]; then CLUSTER=1; shift; fi
[ $# -eq 0 ] || die "usage: scripts/run.sh [--cluster | --stop]"

START=$(date +%s)

# db.sh (cluster.sh) installs the database and build packages; the init script needs start-stop-daemon.
command -v start-stop-daemon >/dev/null || install_packages dpkg
if [ $CLUSTER -eq 1 ]; then
    step "packages (only the missing ones), and the private Galera cluster"
    scripts/cluster.sh up
    # The driver migrates and loads the sample through node 1 (Galera replicates it); the
    # daemons are given every node's URL (`database` takes the list and fails over).
    ADMIN_URL=$(scripts/cluster.sh url 1 --admin)
    DAEMON_URL=$(scripts/cluster.sh url)
else
    step "packages (only the missing ones), and the private database"
    scripts/db.sh up
    ADMIN_URL=$(scripts/db.sh url --admin)
    DAEMON_URL=$(scripts/db.sh url)
fi

step "build ($PROFILE profile): master, yacobot, reader, focuser-run"
BUILD_START=$(date +%s)
cargo build --locked --profile "$PROFILE" -p focuser-master -p focuser-yacobot -p focuser-reader \
    -p focuser-tests --bin master --bin yacobot --bin reader --bin focuser-run
BUILD_SECONDS=$(($(date +%s) - BUILD_START))

step "the pipeline"
rc=0
# FOCUSER_RUN_ARGS adds driver options (see `focuser-run up --help`), e.g. --no-feeds or
# --no-multidoc.
# shellcheck disable=SC2086
FOCUSER_RUN_ADMIN_URL=$ADMIN_URL FOCUSER_RUN_DAEMON_URL=$DAEMON_URL \
    driver up --bin-dir "$BIN" ${FOCUSER_RUN_ARGS:-} || rc=$?
echo
echo "run.sh: $(($(date +%s) - START)) s in all, of which ${BUILD_SECONDS} s building"

if ! driver running; then
    exit $rc
fi
[ $rc -eq 0 ] || say "the run failed (above); its daemons are left running to look at"

stopping=0
stop_all() {
    [ $stopping -eq 1 ] && return
    stopping=1
    echo
    step "stopping"
    driver stop || rc=1
    if [ $CLUSTER -eq 1 ]; then
        echo "the cluster keeps running: scripts/cluster.sh down stops it"
    else
        echo "the database keeps running: scripts/db.sh down stops it"
    fi
    exit $rc
}
trap stop_all INT TERM
echo "The daemons keep running: Ctrl-C here, or scripts/run.sh --stop elsewhere, stops them all."
while driver running; do
    sleep 2
done
trap - INT TERM
echo "the daemons were stopped (scripts/run.sh --stop)"
exit $rc
