#!/usr/bin/env bash
# A PostgreSQL primary and a streaming replica of it on this machine,
# beside (never touching) the default server on 5432.
#
#   tools/pg-replica.sh start      # idempotent; prints the primary's URL
#   tools/pg-replica.sh stop
#   tools/pg-replica.sh status
#   tools/pg-replica.sh url [replica]
#   tools/pg-replica.sh reset      # stop and forget all state
#   tools/pg-replica.sh sync|async # the primary's commits wait for the
#                                  # replica to apply them (remote_apply),
#                                  # or not (asynchronous replication)
#   tools/pg-replica.sh pause|resume   # the replica's replay (a lag)
#   tools/pg-replica.sh promote    # the replica becomes a primary
#   tools/pg-replica.sh psql primary|replica ARGS...
#
# Primary on 127.0.0.1:5441, replica on 5442 (made with pg_basebackup -R
# from the primary), owned by the postgres user, state under
# $AW_PG_REPLICA_DIR (default /tmp/allocworker-pg-replica). The primary
# starts synchronous: synchronous_standby_names names the replica and
# synchronous_commit is remote_apply, so an acknowledged commit is
# visible on the replica and survives its promotion.
set -euo pipefail

BASE=${AW_PG_REPLICA_DIR:-/tmp/allocworker-pg-replica}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PRIMARY_PORT=5441
REPLICA_PORT=5442

as_pg() { runuser -u postgres -- "$@"; }
port_of() { [ "$1" = primary ] && echo $PRIMARY_PORT || echo $REPLICA_PORT; }

running() {   # primary|replica
    [ -f "$BASE/$1/postmaster.pid" ] &&
        as_pg "$BIN/pg_ctl" -D "$BASE/$1" status > /dev/null 2>&1
}

sql() {   # primary|replica SQL
    as_pg "$BIN/psql" -h 127.0.0.1 -p "$(port_of "$1")" -U root -d postgres \
        -XAtqc "$2"
}

init_primary() {
    mkdir -p "$BASE"
    chown postgres:postgres "$BASE"
    as_pg "$BIN/initdb" -D "$BASE/primary" -U root --auth=trust \
        > "$BASE/initdb.log"
    cat >> "$BASE/primary/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PRIMARY_PORT
unix_socket_directories = '$BASE'
shared_buffers = 32MB
max_connections = 100
wal_level = replica
max_wal_senders = 4
hot_standby = on
synchronous_standby_names = 'replica1'
synchronous_commit = remote_apply
EOF
    echo "host replication root 127.0.0.1/32 trust" \
        >> "$BASE/primary/pg_hba.conf"
}

init_replica() {
    as_pg "$BIN/pg_basebackup" -h 127.0.0.1 -p $PRIMARY_PORT -U root \
        -D "$BASE/replica" -R -X stream > "$BASE/basebackup.log" 2>&1
    cat >> "$BASE/replica/postgresql.auto.conf" <<EOF
port = $REPLICA_PORT
primary_conninfo = 'host=127.0.0.1 port=$PRIMARY_PORT user=root application_name=replica1'
EOF
}

launch() {   # primary|replica
    running "$1" && return 0
    as_pg "$BIN/pg_ctl" -D "$BASE/$1" -l "$BASE/$1.log" -w -t 60 start \
        > /dev/null
}

start() {
    [ -d "$BASE/primary" ] || init_primary
    launch primary
    [ -d "$BASE/replica" ] || init_replica
    launch replica
    for _ in $(seq 120); do
        [ "$(sql primary "SELECT count(*) FROM pg_stat_replication
             WHERE state = 'streaming'")" = 1 ] && break
        sleep 0.5
    done
    url
}

stop() {
    local which
    for which in replica primary; do
        running "$which" && as_pg "$BIN/pg_ctl" -D "$BASE/$which" -m fast \
            -w -t 60 stop > /dev/null
    done
    return 0
}

url() {
    echo "postgresql+psycopg2://root@127.0.0.1:$(port_of "${1:-primary}")"
}

status() {
    local which
    for which in primary replica; do
        if running "$which"; then
            echo "$which: 127.0.0.1:$(port_of $which), in recovery: $(sql $which 'SELECT pg_is_in_recovery()')"
        else
            echo "$which: down"
        fi
    done
    running primary && sql primary "SELECT 'streaming to ' || application_name
        || ' (' || sync_state || '), replay lag ' || coalesce(replay_lag::text, '0')
        FROM pg_stat_replication" || true
}

synchronous() {   # on|off
    if [ "$1" = on ]; then
        sql primary "ALTER SYSTEM SET synchronous_standby_names = 'replica1'"
    else
        sql primary "ALTER SYSTEM SET synchronous_standby_names = ''"
    fi
    sql primary "SELECT pg_reload_conf()" > /dev/null
}

promote() {
    as_pg "$BIN/pg_ctl" -D "$BASE/replica" -w promote > /dev/null
    # The replica was copied with the primary's settings: it would wait
    # for a synchronous standby named replica1 that it does not have, and
    # every commit would hang. Alone, it commits locally until a new
    # standby is attached.
    sql replica "ALTER SYSTEM SET synchronous_standby_names = ''" > /dev/null
    sql replica "SELECT pg_reload_conf()" > /dev/null
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    url) url "${2:-primary}" ;;
    reset) stop; rm -rf "$BASE" ;;
    sync) synchronous on ;;
    async) synchronous off ;;
    pause) sql replica "SELECT pg_wal_replay_pause()" > /dev/null ;;
    resume) sql replica "SELECT pg_wal_replay_resume()" > /dev/null ;;
    promote) promote ;;
    psql) shift; which=$1; shift
          as_pg "$BIN/psql" -h 127.0.0.1 -p "$(port_of "$which")" -U root \
              -d postgres "$@" ;;
    *) echo "usage: $0 start|stop|status|url [replica]|reset|sync|async|pause|resume|promote|psql WHICH ARGS" >&2
       exit 2 ;;
esac
