#!/usr/bin/env bash
# The README's test command: every check CI makes, runnable on a fresh Debian machine that has
# only Rust. It installs what is missing (Debian packages through scripts/db.sh, diesel_cli and
# cargo-nextest through cargo), starts the private MariaDB and the private Galera cluster (for the
# cluster tests: FOCUSER_TEST_CLUSTER_URL, the admin URL of each node), then checks formatting,
# lints, that schema/src/schema.rs matches the migrations, and runs the whole test suite.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DIESEL_CLI_VERSION=2.3.4
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

step() { printf '\n=== %s\n' "$*"; }
fail() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

for tool in rustfmt clippy-driver; do
    command -v "$tool" >/dev/null || fail "$tool is missing: rustup component add rustfmt clippy"
done

say() { printf 'test.sh: %s\n' "$*" >&2; }
die() { fail "$*"; }
# shellcheck source=lib/packages.sh
. scripts/lib/packages.sh

step "private database, and the tools the tests drive (logrotate; gawk for the classic pipeline; chromium for the status pages; nginx for bench-fetch)"
scripts/db.sh up >/dev/null
install_packages logrotate gawk chromium nginx-light
FOCUSER_TEST_DATABASE_URL=$(scripts/db.sh url --admin)
export FOCUSER_TEST_DATABASE_URL

step "private Galera cluster (3 nodes, scripts/cluster.sh) for the cluster tests"
scripts/cluster.sh up >/dev/null
FOCUSER_TEST_CLUSTER_URL=$(scripts/cluster.sh url --admin)
export FOCUSER_TEST_CLUSTER_URL

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "schema/src/schema.rs matches the migrations"
if [ "$(diesel --version 2>/dev/null | awk '/^Diesel CLI/ {print $3}')" != "$DIESEL_CLI_VERSION" ]; then
    cargo install diesel_cli --version "=$DIESEL_CLI_VERSION" --no-default-features --features mysql --locked --quiet
fi
check_url="${FOCUSER_TEST_DATABASE_URL%/*}/focuser_schemacheck"
scripts/db.sh sql --admin -e 'DROP DATABASE IF EXISTS focuser_schemacheck; CREATE DATABASE focuser_schemacheck CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
cargo run --quiet --locked -p focuser-schema --bin focuser-migrate -- --database-url "$check_url" run >/dev/null
printed=$(mktemp)
diesel print-schema --database-url "$check_url" >"$printed"
scripts/db.sh sql --admin -e 'DROP DATABASE focuser_schemacheck'
if ! diff -u schema/src/schema.rs "$printed"; then
    rm -f "$printed"
    fail "schema/src/schema.rs differs from 'diesel print-schema' (above); run the migrations and copy its output"
fi
rm -f "$printed"
echo "schema.rs is what diesel print-schema prints"

step "tests"
command -v cargo-nextest >/dev/null || cargo install cargo-nextest --locked --quiet
cargo nextest run --workspace --locked --no-fail-fast
