# What scripts/db.sh (one server) and scripts/cluster.sh (a Galera cluster) share: URLs, client
# options files, the secrets file, a data directory's initialisation, the accounts, and the
# server options both run with. Sourced; expects say() and die().

# Character set, collation and time zone: the daemons rely on these (utf8mb4_bin compares
# URLs byte for byte; times are UTC), so every server of the project runs with them.
SERVER_OPTIONS=(--skip-name-resolve --character-set-server=utf8mb4 --collation-server=utf8mb4_bin
    --default-time-zone=+00:00 --max-connections=500)

urldecode() { local s=${1//+/ }; printf '%b' "${s//%/\\x}"; }

# Splits mysql://user:password@host:port/db into the URL_* variables.
parse_url() {
    local re='^mysql://([^:@/]*)(:([^@/]*))?@([^:/]+)(:([0-9]+))?(/([^?]*))?'
    [[ $1 =~ $re ]] || die "DATABASE_URL is not a mysql://user:password@host:port/db URL"
    URL_USER=$(urldecode "${BASH_REMATCH[1]}")
    URL_PASS=$(urldecode "${BASH_REMATCH[3]}")
    URL_HOST=${BASH_REMATCH[4]}
    URL_PORT=${BASH_REMATCH[6]:-3306}
    URL_DB=${BASH_REMATCH[8]}
}

masked() { sed -E 's#(mysql://[^:@/]*:)[^@]*@#\1***@#g' <<<"$1"; }

# Writes a client options file for the URL parsed last, readable only by us, so that no
# password shows in `ps`; prints its path.
client_options() {
    local opts
    opts=$(mktemp)
    chmod 600 "$opts"
    printf '[client]\nuser=%s\npassword="%s"\nhost=%s\nport=%s\nprotocol=tcp\nconnect-timeout=5\n' \
        "$URL_USER" "$URL_PASS" "$URL_HOST" "$URL_PORT" >"$opts"
    echo "$opts"
}

# The mariadb client on the database of URL, credentials in a private options file:
# `url_client URL [client args]`.
url_client() {
    local opts rc=0
    parse_url "$1"
    shift
    opts=$(client_options)
    mariadb --defaults-extra-file="$opts" "$@" ${URL_DB:+"$URL_DB"} || rc=$?
    rm -f "$opts"
    return $rc
}

# Sets DAEMON_PASSWORD and ADMIN_PASSWORD from FILE, making them up (private file) the first time.
load_secrets() {
    local file=$1
    if [ ! -s "$file" ]; then
        (
            umask 077
            printf 'DAEMON_PASSWORD=%s\nADMIN_PASSWORD=%s\n' \
                "$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)" \
                "$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)" >"$file"
        )
    fi
    # shellcheck disable=SC1090
    . "$file"
}

# A fresh system database in DATA, root reachable only through the socket as the OS user:
# `init_datadir DATA INSTALL_LOG OS_USER`.
init_datadir() {
    local data=$1 log=$2 user=$3
    [ -d "$data/mysql" ] && return 0
    say "initialising $data"
    rm -rf "$data.tmp"
    mkdir -p "$data.tmp"
    # Tried twice: a bootstrap has been seen to fail once on a machine busy installing packages.
    local try
    for try in 1 2; do
        if mariadb-install-db --no-defaults --basedir=/usr --datadir="$data.tmp" --user="$user" \
            --auth-root-authentication-method=socket --auth-root-socket-user="$user" \
            --skip-test-db >"$log" 2>&1; then
            break
        fi
        # The server's own [ERROR] lines say why; the tool's advice after them does not.
        grep -E '\[ERROR\]|ERROR [0-9]+' "$log" | head -n 10 >&2 || true
        [ "$try" -eq 2 ] && die "mariadb-install-db failed twice (see $log)"
        say "mariadb-install-db failed; trying once more"
        rm -rf "$data.tmp"
        mkdir -p "$data.tmp"
        sleep 1
    done
    mv "$data.tmp" "$data"
}

# The statements that create the database DB and the two accounts (passwords from load_secrets).
# Least privilege: the daemons' account only reads and writes rows (of DB and of the main job's
# node databases DB_node*); the admin account owns the schema (migrations), the node databases
# and the per-test databases DB_*.
accounts_sql() {
    local db=$1 host
    echo "CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
    echo "DROP USER IF EXISTS ''@'localhost';"
    for host in localhost 127.0.0.1; do
        echo "CREATE USER IF NOT EXISTS 'focuser'@'$host' IDENTIFIED BY '$DAEMON_PASSWORD';"
        echo "ALTER USER 'focuser'@'$host' IDENTIFIED BY '$DAEMON_PASSWORD';"
        echo "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE TEMPORARY TABLES ON \`$db\`.* TO 'focuser'@'$host';"
        # The main job (scripts/run.sh) gives each crawler node a database of its own.
        echo "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE TEMPORARY TABLES ON \`${db}\\_node%\`.* TO 'focuser'@'$host';"
        echo "CREATE USER IF NOT EXISTS 'focuser_admin'@'$host' IDENTIFIED BY '$ADMIN_PASSWORD';"
        echo "ALTER USER 'focuser_admin'@'$host' IDENTIFIED BY '$ADMIN_PASSWORD';"
        echo "GRANT ALL PRIVILEGES ON \`$db\`.* TO 'focuser_admin'@'$host';"
        echo "GRANT ALL PRIVILEGES ON \`${db}\\_%\`.* TO 'focuser_admin'@'$host';"
    done
}

# Stops the mariadbd of pid $2 (socket $1, called $3 in messages): a clean shutdown, or
# SIGTERM if that is refused, then kill -9 if it is still there after 60 s.
stop_server() {
    local sock=$1 pid=$2 name=$3 waited=0
    say "stopping $name (pid $pid)"
    mariadb-admin --no-defaults --socket="$sock" -u "$OS_USER" --connect-timeout=3 shutdown \
        >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do
        if [ $waited -eq 240 ]; then
            say "$name did not stop within 60 s; killing it"
            kill -9 "$pid" 2>/dev/null || true
        fi
        sleep 0.25
        waited=$((waited + 1))
    done
}
