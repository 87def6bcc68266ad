#!/usr/bin/env bash
# A three-node MariaDB Galera cluster on this machine with HAProxy in front,
# beside (never touching) the default MariaDB server on 3306.
#
#   tools/galera-cluster.sh start     # idempotent; brings up whatever node
#                                     # is down (recovering its position
#                                     # first, so it rejoins by IST), or, if
#                                     # every node died, bootstraps the most
#                                     # advanced one; prints the writer's URL
#   tools/galera-cluster.sh stop [N]  # stops the nodes (or node N) and HAProxy
#   tools/galera-cluster.sh status    # each node's wsrep state, HAProxy's view
#   tools/galera-cluster.sh url [reader|N]  # SQLAlchemy URL: the writer
#                                     # listener, the readers', or node N
#   tools/galera-cluster.sh reset     # stop and forget all state
#   tools/galera-cluster.sh ctl N SQL...    # the mariadb client on node N
#   tools/galera-cluster.sh pid N     # node N's mariadbd process id
#   tools/galera-cluster.sh writer    # the node HAProxy sends writes to
#
# Node N: MySQL on 127.0.0.1:331N, Galera group port 1456N, IST 1457N, SST
# 1458N; HAProxy listens on 127.0.0.1:3320 (writes: one active node, the
# others backups) and 3321 (stale-tolerant reads: the backups). All state
# under $AW_GALERA_CLUSTER_DIR (default /tmp/allocworker-galera-cluster).
# $AW_GALERA_GCACHE_SIZE: the write-set cache of the nodes "start" starts
# (default 64M).
# /etc/mysql/my.cnf belongs to the default server: every mariadbd run here
# gets --defaults-file first and every client --no-defaults.
set -euo pipefail

BASE=${AW_GALERA_CLUSTER_DIR:-/tmp/allocworker-galera-cluster}
NODES="1 2 3"
SQL_PORT0=3310
GROUP_PORT0=14560
IST_PORT0=14570
SST_PORT0=14580
WRITER_PORT=3320
READER_PORT=3321
PROVIDER=/usr/lib/galera/libgalera_smm.so
# The write-set cache (gcache.size) a returning node's IST is served from.
# Read when a node starts: the nodes started by one "start" get the value
# it saw (a test of a node away past the cache starts its cluster with a
# few MiB; production sizes it for the longest absence IST should cover).
GCACHE_SIZE=${AW_GALERA_GCACHE_SIZE:-64M}
TOOLS=$(cd "$(dirname "$0")" && pwd)

dir() { echo "$BASE/node$1"; }
sql_port() { echo $((SQL_PORT0 + $1)); }

sql() {   # N SQL...: run statements on node N (no defaults: never 3306)
    local n=$1
    shift
    mariadb --no-defaults -uroot -S "$(dir "$n")/mysqld.sock" \
        --connect-timeout=2 -N -B -e "$*"
}

pid_of() {   # N: the node's mariadbd pid, from its pid file or command line
    local n=$1 pid
    pid=$(cat "$(dir "$n")/mysqld.pid" 2>/dev/null || true)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
        # A joiner writes its pid file only after its state transfer.
        pid=$(pgrep -f -- "--defaults-file=$(dir "$n")/node.cnf" |
              head -1 || true)
    fi
    [ -n "$pid" ] || return 1
    echo "$pid"
}

alive() {   # PID: running, not a zombie waiting to be reaped
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] && ! awk '{ exit $3 != "Z" }' "/proc/$1/stat"
}

running() {
    local pid
    pid=$(pid_of "$1" 2>/dev/null) && alive "$pid"
}

wsrep_state() {   # N: "Synced Primary" when healthy
    timeout 3 mariadb --no-defaults -uroot -h127.0.0.1 -P "$(sql_port "$1")" \
        --connect-timeout=1 -N -B -e "SELECT
            (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
             WHERE VARIABLE_NAME = 'wsrep_local_state_comment'),
            (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
             WHERE VARIABLE_NAME = 'wsrep_cluster_status')" 2>/dev/null |
        tr '\t' ' ' || true
}

gcomm() {
    local parts=() n
    for n in $NODES; do parts+=("127.0.0.1:$((GROUP_PORT0 + n))"); done
    local IFS=,
    echo "gcomm://${parts[*]}"
}

write_node_config() {   # N
    local n=$1 d
    d=$(dir "$n")
    cat > "$d/node.cnf" <<EOF
[mysqld]
user = mysql
datadir = $d/data
# Its own: a starting mariadbd deletes every #sql* file in its tmpdir,
# and /tmp holds the default server's live temporary tables.
tmpdir = $d/tmp
socket = $d/mysqld.sock
pid-file = $d/mysqld.pid
log-error = $d/error.log
port = $(sql_port "$n")
bind-address = 127.0.0.1
skip-name-resolve
max_connections = 300
# Small on a shared 2-core machine.
innodb_buffer_pool_size = 64M
innodb_log_file_size = 48M
performance_schema = OFF
# What Galera needs, and what keeps acknowledged commits: a commit is on
# disk before it is acknowledged (Jepsen lost commits with other values).
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
innodb_flush_log_at_trx_commit = 1
wsrep_on = ON
wsrep_provider = $PROVIDER
wsrep_cluster_name = allocworker_galera
wsrep_cluster_address = $(gcomm)
wsrep_node_name = galera$n
wsrep_node_address = 127.0.0.1:$((GROUP_PORT0 + n))
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:$((SST_PORT0 + n))
wsrep_slave_threads = 2
# A peer that stops answering is suspected after 3 s and evicted after 6 s
# (defaults 5 s / 15 s), so the two others go on sooner.
wsrep_provider_options = "ist.recv_addr=127.0.0.1:$((IST_PORT0 + n));gcache.size=$GCACHE_SIZE;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.keepalive_period=PT1S;evs.inactive_check_period=PT0.5S"
EOF
}

write_haproxy_config() {
    local n backup
    # Written aside and renamed: a check of the cluster before may still
    # be running the old one ("Text file busy" when written in place).
    sed "s|@BASE@|$BASE|g" "$TOOLS/galera-wsrep-check.sh" \
        > "$BASE/wsrep-check.sh.new"
    chmod 755 "$BASE/wsrep-check.sh.new"
    mv -f "$BASE/wsrep-check.sh.new" "$BASE/wsrep-check.sh"
    {
        cat <<EOF
global
    maxconn 2000
    external-check
    insecure-fork-wanted
    stats socket $BASE/haproxy.sock mode 600 level admin

defaults
    mode tcp
    timeout connect 2s
    # Idle connections are cut after this: keep [database]
    # connection_recycle_time below it (the tests use 300 and 280).
    timeout client 300s
    timeout server 300s
    timeout check 3s
    default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions

# Every write goes to one node: the check passes only the node named in
# $BASE/writer and moves that name when HAProxy marks the node down, so a
# node that comes back waits as a standby (see galera-wsrep-check.sh).
listen galera_writer
    bind 127.0.0.1:$WRITER_PORT
    option external-check
    external-check path "/usr/bin:/bin"
    external-check command $BASE/wsrep-check.sh
EOF
        for n in $NODES; do
            backup=$([ "$n" = 1 ] && echo "" || echo " backup")
            echo "    server galera$n 127.0.0.1:$(sql_port "$n") check$backup"
        done
        cat <<EOF

# Stale-tolerant reads ([database] slave_connection): spread over nodes.
listen galera_readers
    bind 127.0.0.1:$READER_PORT
    balance leastconn
    option external-check
    external-check path "/usr/bin:/bin"
    external-check command $BASE/wsrep-check.sh
EOF
        for n in $NODES; do
            echo "    server galera$n 127.0.0.1:$(sql_port "$n") check"
        done
    } > "$BASE/haproxy.cfg"
}

ensure_haproxy_installed() {
    command -v haproxy > /dev/null && return 0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy > /dev/null
}

haproxy_running() {
    [ -s "$BASE/haproxy.pid" ] && kill -0 "$(cat "$BASE/haproxy.pid")" 2>/dev/null
}

start_haproxy() {
    haproxy_running && return 0
    ensure_haproxy_installed
    haproxy -q -f "$BASE/haproxy.cfg" -D -p "$BASE/haproxy.pid"
}

# HAProxy takes every server to be up when it starts, until its checks
# say otherwise: a node that is not the writer (one a failover left
# behind) takes connections for a moment, which its check then cuts
# (on-marked-down shutdown-sessions). Start returns once the writer
# listener sends to the writer alone.
await_writer_routed() {
    local _ up
    for _ in $(seq 150); do
        up=$(haproxy_cmd "show servers state galera_writer" 2>/dev/null |
            awk 'NR > 2 && NF > 6 && $6 == 2 {print $4}') || up=""
        [ "$up" = "galera$(writer)" ] && return 0
        sleep 0.2
    done
    echo "haproxy: galera_writer does not send to galera$(writer) alone" >&2
    return 1
}

haproxy_cmd() {   # a command on HAProxy's admin socket
    python3 - "$BASE/haproxy.sock" "$*" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b'\n')
out = b''
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode())
EOF
}

writer() {   # the node number the writer listener sends to
    sed -n 's/^galera//p' "$BASE/writer" 2>/dev/null || true
}

prepare() {
    local n d
    mkdir -p "$BASE"
    for n in $NODES; do
        d=$(dir "$n")
        mkdir -p "$d/data" "$d/tmp"
        write_node_config "$n"
        chown -R mysql:mysql "$d"
    done
    write_haproxy_config
}

recovered_position() {   # N: UUID:SEQNO from --wsrep-recover (0.6 s)
    local n=$1 d
    d=$(dir "$n")
    [ -f "$d/data/grastate.dat" ] || return 0
    rm -f "$d/recover.log"
    mariadbd --defaults-file="$d/node.cnf" --wsrep-recover \
        --log-error="$d/recover.log" > /dev/null 2>&1 || true
    sed -n 's/.*WSREP: Recovered position: \(.*\)$/\1/p' "$d/recover.log" |
        tail -1
}

launch() {   # N [EXTRA ARGS...]
    local n=$1 d
    shift
    d=$(dir "$n")
    rm -f "$d/mysqld.pid"
    setsid mariadbd --defaults-file="$d/node.cnf" "$@" \
        > "$d/console.log" 2>&1 < /dev/null &
}

await_synced() {   # N [SECONDS]
    local n=$1 i
    for i in $(seq $((${2:-180} * 2))); do
        [ "$(wsrep_state "$n")" = "Synced Primary" ] && return 0
        running "$n" || { echo "node $n exited: see $(dir "$n")/error.log" >&2
                          return 1; }
        sleep 0.5
    done
    echo "node $n not Synced after ${2:-180} s" >&2
    return 1
}

install_first() {   # N: a fresh datadir, and root over TCP for HAProxy
    local n=$1 d
    d=$(dir "$n")
    mariadb-install-db --defaults-file="$d/node.cnf" --auth-root-authentication-method=normal \
        --skip-test-db > "$d/install.log" 2>&1
}

donor_for() {   # N: Synced nodes other than N and the writer, for SST
    local n=$1 m w list=()
    w=$(writer)
    for m in $NODES; do
        [ "$m" = "$n" ] || [ "$m" = "$w" ] && continue
        [ "$(wsrep_state "$m")" = "Synced Primary" ] && list+=("galera$m")
    done
    local IFS=,
    # The trailing comma lets Galera fall back to any node if none of
    # these can serve (only the writer is left).
    [ ${#list[@]} -eq 0 ] || echo "${list[*]},"
}

bootstrap() {   # every node is down: start the most advanced one alone
    local n best="" best_seqno=-2 pos seqno
    for n in $NODES; do
        pos=$(recovered_position "$n")
        [ -n "$pos" ] || continue
        seqno=${pos##*:}
        echo "node $n recovered position $pos" >&2
        if [ "$seqno" -gt "$best_seqno" ]; then
            best=$n best_seqno=$seqno
        fi
    done
    if [ -z "$best" ]; then   # a new cluster
        best=1
        install_first 1
        launch 1 --wsrep-new-cluster
    else
        sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' \
            "$(dir "$best")/data/grastate.dat"
        echo "bootstrapping from node $best (seqno $best_seqno)" >&2
        launch "$best" --wsrep-new-cluster
    fi
    await_synced "$best"
    sql "$best" "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
                 GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION"
}

rejoin() {   # N: start a node into the running cluster
    local n=$1 pos args=() donor
    pos=$(recovered_position "$n")
    [ -n "$pos" ] && args+=("--wsrep-start-position=$pos")
    donor=$(donor_for "$n")
    [ -n "$donor" ] && args+=("--wsrep-sst-donor=$donor")
    launch "$n" "${args[@]}"
}

start() {
    local n any=""
    prepare
    for n in $NODES; do running "$n" && any=$n && break; done
    [ -n "$any" ] || bootstrap
    for n in $NODES; do
        running "$n" || rejoin "$n"
    done
    for n in $NODES; do await_synced "$n"; done
    # The first writer: node 1, unless one was chosen before.
    [ -s "$BASE/writer" ] || echo galera1 > "$BASE/writer"
    start_haproxy
    await_writer_routed
    url
}

stop_node() {   # N
    local n=$1 pid
    pid=$(pid_of "$n") || return 0
    kill -CONT "$pid" 2>/dev/null || true   # a test may have frozen it
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
}

stop() {
    local n
    if [ -n "${1:-}" ]; then stop_node "$1"; return; fi
    if haproxy_running; then
        kill "$(cat "$BASE/haproxy.pid")" 2>/dev/null || true
        rm -f "$BASE/haproxy.pid"
    fi
    # The nodes one after the other: the last to stop is the most
    # advanced and is marked safe to bootstrap.
    for n in 3 2 1; do stop_node "$n"; done
}

url() {
    case "${1:-writer}" in
        writer) echo "mysql+pymysql://root@127.0.0.1:$WRITER_PORT" ;;
        reader) echo "mysql+pymysql://root@127.0.0.1:$READER_PORT" ;;
        *) echo "mysql+pymysql://root@127.0.0.1:$(sql_port "$1")" ;;
    esac
}

status() {
    local n
    for n in $NODES; do
        if running "$n"; then
            echo "galera$n: pid $(pid_of "$n"), 127.0.0.1:$(sql_port "$n"), $(wsrep_state "$n")"
        else
            echo "galera$n: down"
        fi
    done
    if haproxy_running; then
        echo "haproxy: pid $(cat "$BASE/haproxy.pid"), writer galera$(writer)"
        haproxy_cmd "show servers state" | awk 'NR > 2 && NF > 6 {
            print "  " $2 "/" $4 ": " ($6 == 2 ? "UP" : "DOWN")}'
        echo "  (in galera_writer a healthy node that is not the writer is DOWN: a standby)"
    else
        echo "haproxy: down"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop "${2:-}" ;;
    status) status ;;
    url) url "${2:-}" ;;
    reset) stop; rm -rf "$BASE" ;;
    ctl) shift; n=$1; shift; sql "$n" "$@" ;;
    pid) pid_of "$2" ;;
    writer) writer ;;
    haproxy) shift; haproxy_cmd "$@" ;;
    *) echo "usage: $0 start|stop [N]|status|url [reader|N]|reset|ctl N SQL|pid N|writer|haproxy CMD" >&2
       exit 2 ;;
esac
