#!/usr/bin/env bash
# The project's private 3-node MariaDB Galera cluster on loopback, like scripts/db.sh's one server:
#   up | down | status | kill N | start N | isolate N | rejoin N | url [N] [--admin] | sql N [--admin] [args]
#
# `up` installs what is missing (mariadb-server, galera-4, rsync for the state transfers),
# initialises node 1's data directory under var/cluster/node1, bootstraps the cluster on it and
# joins nodes 2 and 3 (a full copy by rsync, SST), waits until all three are Synced, and creates
# the same database and accounts as db.sh. Run again, it starts the nodes that are down; with all
# three down it bootstraps from the node that stopped last (or, after a crash of all three, the
# one with the most recent transaction). `kill N` kills node N's mariadbd with SIGKILL; `start N`
# starts it again and waits until it has caught up (IST, or SST) and is Synced. `isolate N` cuts
# node N off the others (gmcast.isolate: it keeps running, without quorum, refusing queries);
# `rejoin N` undoes it and waits until it is Synced. `url` prints the daemons' URL list (one
# mysql:// URL per node, comma-separated), `url N` node N's URL; --admin the admin account's.
#
# Ports, from FOCUSER_CLUSTER_PORT (base B, default 3411): node N's SQL port is B+N-1, its
# group communication port B+10000+N-1, its IST port B+15000+N-1, its SST port B+20000+N-1; two
# clusters whose bases are at least 3 apart never share a port.
#
# Environment: FOCUSER_CLUSTER_PORT, FOCUSER_DB_NAME (default focuser), FOCUSER_VAR (default
# <repo>/var), FOCUSER_CLUSTER_POOL (InnoDB buffer pool per node, default 256M),
# FOCUSER_CLUSTER_TIMEOUT (seconds a node may take to be Synced, default 180).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VAR=${FOCUSER_VAR:-$ROOT/var}
CL_DIR=$VAR/cluster
SECRETS=$CL_DIR/credentials
CNF=$CL_DIR/node.cnf
BASE=${FOCUSER_CLUSTER_PORT:-3411}
DB_NAME=${FOCUSER_DB_NAME:-focuser}
TIMEOUT=${FOCUSER_CLUSTER_TIMEOUT:-180}
OS_USER=$(id -un)
NODES=(1 2 3)
PROVIDER=/usr/lib/galera/libgalera_smm.so
PACKAGES=(mariadb-server mariadb-client galera-4 mariadb-backup socat iproute2 libmariadb-dev-compat libcurl4-openssl-dev pkg-config)

say() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

# shellcheck source=lib/packages.sh
. "$ROOT/scripts/lib/packages.sh"
# shellcheck source=lib/mariadb.sh
. "$ROOT/scripts/lib/mariadb.sh"

[[ $BASE =~ ^[0-9]+$ ]] && [ "$BASE" -ge 1024 ] && [ "$BASE" -le 12000 ] ||
    die "FOCUSER_CLUSTER_PORT must be a number from 1024 to 12000 (its Galera ports are 10000-20002 above it)"

node_dir() { echo "$CL_DIR/node$1"; }
sql_port() { echo $((BASE + $1 - 1)); }
gcomm_port() { echo $((BASE + 10000 + $1 - 1)); }
ist_port() { echo $((BASE + 15000 + $1 - 1)); }
sst_port() { echo $((BASE + 20000 + $1 - 1)); }
sock() { echo "$(node_dir "$1")/mariadbd.sock"; }
node_log() { echo "$(node_dir "$1")/error.log"; }

check_node() { [[ ${1:-} =~ ^[123]$ ]] || die "a node is 1, 2 or 3, not '${1:-}'"; }

root_sql() {
    local n=$1
    shift
    mariadb --no-defaults --socket="$(sock "$n")" -u "$OS_USER" --connect-timeout=3 "$@"
}

node_pid() {
    local pidfile pid
    pidfile="$(node_dir "$1")/mariadbd.pid"
    [ -s "$pidfile" ] || return 1
    pid=$(cat "$pidfile")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

# The node's Galera state, "state size cluster_status ready" (e.g. "Synced 3 Primary ON"), or
# nothing when it does not answer.
node_state() {
    timeout 10 mariadb --no-defaults --socket="$(sock "$1")" -u "$OS_USER" --connect-timeout=2 -N -B -e \
        "SELECT GROUP_CONCAT(VARIABLE_VALUE ORDER BY FIELD(VARIABLE_NAME, 'WSREP_LOCAL_STATE_COMMENT',
            'WSREP_CLUSTER_SIZE', 'WSREP_CLUSTER_STATUS', 'WSREP_READY') SEPARATOR ' ')
         FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('WSREP_LOCAL_STATE_COMMENT',
            'WSREP_CLUSTER_SIZE', 'WSREP_CLUSTER_STATUS', 'WSREP_READY')" 2>/dev/null || true
}

port_taken() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

log_tail() {
    local log
    log=$(node_log "$1")
    [ -f "$log" ] && { echo "--- last lines of $log:"; tail -n 25 "$log"; } >&2 || true
}

running_nodes() {
    local n
    for n in "${NODES[@]}"; do node_pid "$n" >/dev/null && echo "$n"; done
    return 0
}

# The only options file the nodes and their state transfer scripts read (not /etc/mysql): the
# transfers' messages go to the node's error log rather than to syslog, and the buffer pool is
# set here because the transfer script hands a command-line one to mariadb-backup, which rejects it.
write_cnf() {
    printf '[mysqld]\ninnodb-buffer-pool-size=%s\n[sst]\nsst-syslog=-1\n' "${FOCUSER_CLUSTER_POOL:-256M}" >"$CNF"
}

# Node N's server and Galera options (the settings Galera needs: row-based replication,
# interleaved auto-increment locks, InnoDB; every port from the base).
node_options() {
    local n=$1 dir m addrs=()
    dir=$(node_dir "$n")
    for m in "${NODES[@]}"; do addrs+=("127.0.0.1:$(gcomm_port "$m")"); done
    NODE_OPTIONS=(--defaults-file="$CNF" --basedir=/usr --datadir="$dir/data" --tmpdir="$dir/tmp"
        --socket="$(sock "$n")" --port="$(sql_port "$n")" --bind-address=127.0.0.1
        --pid-file="$dir/mariadbd.pid" --user="$OS_USER" "${SERVER_OPTIONS[@]}"
        --binlog-format=ROW --innodb-autoinc-lock-mode=2 --default-storage-engine=InnoDB
        --wsrep-on=ON --wsrep-provider="$PROVIDER" --wsrep-cluster-name="focuser-$BASE"
        --wsrep-cluster-address="gcomm://$(IFS=,; echo "${addrs[*]}")"
        --wsrep-node-name="node$n" --wsrep-node-address="127.0.0.1:$(gcomm_port "$n")"
        --wsrep-node-incoming-address="127.0.0.1:$(sql_port "$n")"
        --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$(gcomm_port "$n");ist.recv_addr=127.0.0.1:$(ist_port "$n");gcache.size=128M"
        --wsrep-sst-method=mariabackup --wsrep-sst-receive-address="127.0.0.1:$(sst_port "$n")")
    write_cnf
    mkdir -p "$dir/data" "$dir/tmp"
}

# Starts node N's mariadbd; `bootstrap` as the first node of a new primary component.
launch() {
    local n=$1 mode=${2:-join} dir extra=() position
    dir=$(node_dir "$n")
    port_taken "$(sql_port "$n")" &&
        die "port $(sql_port "$n") on 127.0.0.1 is taken by another process; set FOCUSER_CLUSTER_PORT to another base"
    if [ "$mode" = bootstrap ]; then extra=(--wsrep-new-cluster); fi
    if [ "$(saved_seqno "$n")" = -1 ]; then
        position=$(recovered_position "$n")
        if [ -n "$position" ]; then extra+=(--wsrep-start-position="$position"); fi
    fi
    local how=""
    [ "$mode" = bootstrap ] && how=" (bootstrapping the cluster)"
    say "starting node $n on 127.0.0.1:$(sql_port "$n")${position:+ from transaction ${position##*:}}$how"
    node_options "$n"
    rm -f "$(sock "$n")" "$dir/mariadbd.pid"
    setsid /usr/sbin/mariadbd "${NODE_OPTIONS[@]}" --log-error="$(node_log "$n")" "${extra[@]}" \
        </dev/null >>"$dir/mariadbd.out" 2>&1 9>&- &
    echo $! >"$dir/launched.pid"
    disown $! # its end is told by wait_synced, with its log, not by bash's job report
}

# Waits until node N is Synced in a primary component of WANT nodes (default: as many as run).
wait_synced() {
    local n=$1 want=${2:-} waited=0 state="" launched size
    launched=$(cat "$(node_dir "$n")/launched.pid" 2>/dev/null || echo "")
    while :; do
        state=$(node_state "$n")
        size=${want:-$(running_nodes | wc -l)}
        [[ $state == "Synced $size Primary ON" ]] && return 0
        if [ -n "$launched" ] && ! kill -0 "$launched" 2>/dev/null && ! node_pid "$n" >/dev/null; then
            log_tail "$n"
            die "node $n's mariadbd exited before it was Synced"
        fi
        if [ $waited -ge $((TIMEOUT * 2)) ]; then
            log_tail "$n"
            die "node $n is not Synced in a cluster of $size within $TIMEOUT s (state: ${state:-no answer})"
        fi
        sleep 0.5
        waited=$((waited + 1))
    done
}

# Node N's last committed transaction, uuid:seqno, as InnoDB has it (mariadbd --wsrep-recover,
# as mysqld_safe does): after a crash grastate.dat no longer knows it, and without it a node
# rejoins by a full copy (SST) instead of the transactions it missed (IST).
recovered_position() {
    local n=$1 dir
    dir=$(node_dir "$n")
    [ -d "$dir/data/mysql" ] || return 0
    node_options "$n"
    rm -f "$dir/recover.log"
    /usr/sbin/mariadbd "${NODE_OPTIONS[@]}" --wsrep-recover --log-error="$dir/recover.log" \
        </dev/null >/dev/null 2>&1 9>&- || true
    sed -n 's/.*WSREP: Recovered position: \([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' "$dir/recover.log" 2>/dev/null | tail -n 1
}

# grastate.dat's seqno for node N (-1 while it runs and after a crash).
saved_seqno() {
    sed -n 's/^seqno: *//p' "$(node_dir "$1")/data/grastate.dat" 2>/dev/null || true
}

# The node to bootstrap when all are down: the one Galera marked safe (it stopped last), else
# the one with the most recent transaction after a crash of all.
bootstrap_node() {
    local n best="" best_seqno=-2 seqno grastate
    for n in "${NODES[@]}"; do
        grastate="$(node_dir "$n")/data/grastate.dat"
        [ -f "$grastate" ] && grep -q '^safe_to_bootstrap: *1' "$grastate" && { echo "$n"; return 0; }
    done
    for n in "${NODES[@]}"; do
        seqno=$(recovered_position "$n")
        seqno=${seqno##*:}
        [ -n "$seqno" ] || continue
        say "node $n: last transaction $seqno"
        if [ "$seqno" -gt "$best_seqno" ]; then best=$n best_seqno=$seqno; fi
    done
    [ -n "$best" ] || return 1
    sed -i 's/^safe_to_bootstrap: *0/safe_to_bootstrap: 1/' "$(node_dir "$best")/data/grastate.dat"
    echo "$best"
}

create_accounts() {
    local n=$1
    accounts_sql "$DB_NAME" | root_sql "$n" || die "could not create the database and accounts on node $n"
}

lock() {
    mkdir -p "$CL_DIR"
    exec 9>"$CL_DIR/lock"
    flock 9
}

cmd_up() {
    install_packages "${PACKAGES[@]}"
    lock
    load_secrets "$SECRETS"
    local running n first
    mapfile -t running < <(running_nodes)
    if [ ${#running[@]} -eq 0 ]; then
        if ! first=$(bootstrap_node); then
            first=1
            mkdir -p "$(node_dir 1)"
            init_datadir "$(node_dir 1)/data" "$(node_dir 1)/install.log" "$OS_USER"
        fi
        launch "$first" bootstrap
        wait_synced "$first" 1
        running=("$first")
    fi
    for n in "${NODES[@]}"; do
        node_pid "$n" >/dev/null && continue
        launch "$n" join
        wait_synced "$n" $((${#running[@]} + 1))
        running+=("$n")
    done
    for n in "${NODES[@]}"; do wait_synced "$n" 3; done
    create_accounts "${running[0]}" # idempotent; replicated to the others
    say "all three nodes Synced: 127.0.0.1:$(sql_port 1), $(sql_port 2), $(sql_port 3)"
    echo "DATABASE_URL=$(url_list daemon)"
}

stop_node() {
    local n=$1 pid
    pid=$(node_pid "$n") || return 0
    stop_server "$(sock "$n")" "$pid" "node $n"
}

# Stops the nodes one after the other, node 1 last: it is then the safe one to bootstrap from.
cmd_down() {
    lock
    local n
    [ -n "$(running_nodes)" ] || { say "not running"; return 0; }
    for n in 3 2 1; do stop_node "$n"; done
}

cmd_status() {
    local n pid state synced=0
    for n in "${NODES[@]}"; do
        if pid=$(node_pid "$n"); then
            state=$(node_state "$n")
            echo "node $n: running, pid $pid, 127.0.0.1:$(sql_port "$n"), ${state:-not answering}"
            [[ $state == "Synced 3 Primary ON" ]] && synced=$((synced + 1))
        else
            echo "node $n: down, 127.0.0.1:$(sql_port "$n"), data $(node_dir "$n")/data"
        fi
    done
    [ $synced -eq 3 ] || return 3
}

cmd_kill() {
    local n=$1 pid
    check_node "$n"
    pid=$(node_pid "$n") || die "node $n is not running"
    say "killing node $n (pid $pid) with SIGKILL"
    kill -9 "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

cmd_start() {
    local n=$1 others
    check_node "$n"
    lock
    load_secrets "$SECRETS"
    if node_pid "$n" >/dev/null; then
        say "node $n is already running"
    else
        others=$(running_nodes | wc -l)
        [ "$others" -gt 0 ] || die "no other node is running: start the cluster with 'up'"
        launch "$n" join
    fi
    wait_synced "$n"
}

set_isolate() {
    root_sql "$1" -e "SET GLOBAL wsrep_provider_options='gmcast.isolate=$2'" ||
        die "could not set gmcast.isolate=$2 on node $1"
}

cmd_isolate() {
    local n=$1 m waited=0 state
    check_node "$n"
    node_pid "$n" >/dev/null || die "node $n is not running"
    say "isolating node $n from the others"
    set_isolate "$n" 1
    # Done when the node has lost quorum and the others have formed a primary component without it.
    while :; do
        local ok=1
        state=$(node_state "$n")
        [[ $state == *non-Primary* || $state == *Disconnected* ]] || ok=0
        for m in $(running_nodes); do
            [ "$m" = "$n" ] && continue
            [[ $(node_state "$m") == *" Primary ON" ]] || ok=0
            [[ $(node_state "$m") == "Synced $(($(running_nodes | wc -l) - 1)) "* ]] || ok=0
        done
        [ $ok -eq 1 ] && return 0
        [ $waited -ge $((TIMEOUT * 2)) ] && die "node $n did not leave the primary component within $TIMEOUT s (state: $state)"
        sleep 0.5
        waited=$((waited + 1))
    done
}

cmd_rejoin() {
    local n=$1
    check_node "$n"
    node_pid "$n" >/dev/null || die "node $n is not running"
    say "rejoining node $n"
    set_isolate "$n" 0
    wait_synced "$n"
}

# The URLs of the daemon (or admin) account, one per node, comma-separated; or node N's.
url_list() {
    local who=$1 n=${2:-} user pass urls=()
    if [ "$who" = admin ]; then user=focuser_admin pass=$ADMIN_PASSWORD; else user=focuser pass=$DAEMON_PASSWORD; fi
    local nodes=("${NODES[@]}")
    [ -n "$n" ] && nodes=("$n")
    for n in "${nodes[@]}"; do urls+=("mysql://$user:$pass@127.0.0.1:$(sql_port "$n")/$DB_NAME"); done
    (IFS=,; echo "${urls[*]}")
}

cmd_url() {
    local who=daemon n=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --admin) who=admin ;;
            *) check_node "$1"; n=$1 ;;
        esac
        shift
    done
    [ -s "$SECRETS" ] || die "the cluster was never set up; run: scripts/cluster.sh up"
    load_secrets "$SECRETS"
    url_list "$who" "$n"
}

# The mariadb client on node N's database: `sql N [--admin] [client args]`.
cmd_sql() {
    local n=${1:-} which=()
    check_node "$n"
    shift
    if [ "${1:-}" = "--admin" ]; then which=(--admin); shift; fi
    url_client "$(cmd_url "$n" "${which[@]}")" "$@"
}

usage="usage: $0 up | down | status | kill N | start N | isolate N | rejoin N | url [N] [--admin] | sql N [--admin] [client args]"
cmd=${1:-}
shift || true
case "$cmd" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    kill) cmd_kill "${1:-}" ;;
    start) cmd_start "${1:-}" ;;
    isolate) cmd_isolate "${1:-}" ;;
    rejoin) cmd_rejoin "${1:-}" ;;
    url) cmd_url "$@" ;;
    sql) cmd_sql "$@" ;;
    *) echo "$usage" >&2; exit 2 ;;
esac
