#!/usr/bin/env bash
# The README's run command. For now (the foundation): bring the private MariaDB up, apply the
# migrations, load a small sample (two nodes and a disabled one, a few partner domains and
# URLs, one feed resource) and print the answers of the operator queries in conf/admin.sql.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

step() { printf '\n=== %s\n' "$*"; }

step "private database"
scripts/db.sh up

step "migrations"
DATABASE_URL=$(scripts/db.sh url --admin) \
    cargo run --quiet --locked -p focuser-schema --bin focuser-migrate -- run

step "sample data (scripts/sample/foundation.sql)"
scripts/db.sh sql --admin <scripts/sample/foundation.sql
echo "loaded"

# Print each `-- [label] question` of admin.sql with its answer.
current=""
while IFS= read -r line; do
    case $line in
        "-- ["*)
            printf '\n--- %s\n' "${line#-- }"
            current=""
            ;;
        --*|"") ;;
        *)
            current+="$line"$'\n'
            if [[ $line == *";" ]]; then
                scripts/db.sh sql --table -e "$current"
                current=""
            fi
            ;;
    esac
done <conf/admin.sql

step "done"
echo "DATABASE_URL for the daemons: $(scripts/db.sh url | sed -E 's#(mysql://[^:]*:)[^@]*@#\1***@#')"
echo "run your own queries:         scripts/db.sh sql            (add --admin to change the schema)"
echo "stop the database:            scripts/db.sh down"
