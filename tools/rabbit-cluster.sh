#!/usr/bin/env bash
# A three-node RabbitMQ cluster on this machine, beside (never touching) the
# default node rabbit@localhost on 5672.
#
#   tools/rabbit-cluster.sh start     # idempotent; prints the transport_url
#   tools/rabbit-cluster.sh stop      # stops only these three nodes
#   tools/rabbit-cluster.sh status
#   tools/rabbit-cluster.sh url
#   tools/rabbit-cluster.sh reset     # stop and forget all state
#   tools/rabbit-cluster.sh ctl N ARGS...   # rabbitmqctl -n rmqN@localhost
#   tools/rabbit-cluster.sh solo start|stop   # a fourth node, alone
#
# Nodes rmq1..3@localhost, AMQP on 127.0.0.1:5681..5683, distribution on
# 25681..25683. The solo node rmq4@localhost (127.0.0.1:5684) is a
# single-node broker of its own, for tests that restart a whole broker:
# the default node serves every other test, so it is never restarted.
# All state (data, logs, pid files, its own Erlang cookie and HOME)
# under $AW_RABBIT_CLUSTER_DIR (default /tmp/allocworker-rabbit-cluster),
# so every checkout on the machine shares one cluster. Each node gets its own
# config and an empty env file, because /etc/rabbitmq pins the default
# node's name and port.
set -euo pipefail

BASE=${AW_RABBIT_CLUSTER_DIR:-/tmp/allocworker-rabbit-cluster}
BIN=/usr/lib/rabbitmq/bin
NODES="1 2 3"
SOLO=4
AMQP_PORT0=5680
DIST_PORT0=25680
NET_TICKTIME=10

node_env() {   # N: the environment one node (and its CLI) runs with
    local n=$1 dir=$BASE/rmq$1
    echo HOME="$BASE/home" \
        RABBITMQ_NODENAME="rmq$n@localhost" \
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        RABBITMQ_NODE_PORT=$((AMQP_PORT0 + n)) \
        RABBITMQ_DIST_PORT=$((DIST_PORT0 + n)) \
        RABBITMQ_MNESIA_BASE="$dir/mnesia" \
        RABBITMQ_LOG_BASE="$dir/log" \
        RABBITMQ_PID_FILE="$dir/rmq.pid" \
        RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
        RABBITMQ_CONF_ENV_FILE="$BASE/empty-env.conf" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$BASE/enabled_plugins" \
        ERL_EPMD_ADDRESS=127.0.0.1
}

ctl() {   # N ARGS...
    local n=$1
    shift
    env $(node_env "$n") "$BIN/rabbitmqctl" -n "rmq$n@localhost" "$@"
}

running() {   # N: is the node's Erlang VM up (app running or not)?
    local pidfile=$BASE/rmq$1/rmq.pid
    [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

url() {
    local parts=() n
    for n in $NODES; do
        parts+=("guest:guest@127.0.0.1:$((AMQP_PORT0 + n))")
    done
    local IFS=,
    echo "rabbit://${parts[*]}/"
}

prepare() {
    mkdir -p "$BASE/home"
    if [ ! -s "$BASE/home/.erlang.cookie" ]; then
        head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' \
            > "$BASE/home/.erlang.cookie"
        chmod 400 "$BASE/home/.erlang.cookie"
    fi
    : > "$BASE/empty-env.conf"
    echo '[].' > "$BASE/enabled_plugins"
    local n
    for n in $NODES $SOLO; do
        mkdir -p "$BASE/rmq$n/log"
        cat > "$BASE/rmq$n/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$((AMQP_PORT0 + n))
loopback_users = none
cluster_partition_handling = pause_minority
EOF
    done
}

launch() {   # N
    local n=$1
    running "$n" && return 0
    rm -f "$BASE/rmq$n/rmq.pid"
    # Small on 2 cores: one scheduler, one dirty CPU scheduler, 2 async.
    # net_ticktime 10 (not 60): a hung peer is declared down after 7-13 s,
    # and until then every metadata change (a queue declared by a client
    # that reconnects) waits for it on every node.
    env $(node_env "$n") \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+S 1:1 +SDcpu 1:1 +A 2 -kernel inet_dist_use_interface {127,0,0,1} -kernel net_ticktime $NET_TICKTIME" \
        setsid "$BIN/rabbitmq-server" > "$BASE/rmq$n/log/console.log" 2>&1 &
}

await() {   # N
    local n=$1 i
    for i in $(seq 100); do
        [ -s "$BASE/rmq$n/rmq.pid" ] && break
        sleep 0.2
    done
    ctl "$n" wait --timeout 120 "$BASE/rmq$n/rmq.pid" > /dev/null
}

members() {   # the running nodes rmq1 sees, one a line
    ctl 1 cluster_status --formatter json 2>/dev/null |
        python3 -c 'import json, sys
print("\n".join(json.load(sys.stdin)["running_nodes"]))' 2>/dev/null || true
}

start() {
    prepare
    local n
    for n in $NODES; do launch "$n"; done
    for n in $NODES; do await "$n"; done
    for n in 2 3; do
        if ! ctl 1 cluster_status 2>/dev/null | grep -q "rmq$n@localhost"; then
            ctl "$n" stop_app > /dev/null 2>&1
            ctl "$n" reset > /dev/null 2>&1
            ctl "$n" join_cluster rmq1@localhost > /dev/null 2>&1
        fi
        ctl "$n" start_app > /dev/null
    done
    ctl 1 start_app > /dev/null
    [ "$(members | sort -u | wc -l)" -eq 3 ] || {
        echo "cluster did not form: $(members | tr '\n' ' ')" >&2
        exit 1
    }
    url
}

stop() {   # [N...]: these nodes, by default the cluster's
    local n pid nodes=${*:-$NODES}
    for n in $nodes; do
        pid=$(cat "$BASE/rmq$n/rmq.pid" 2>/dev/null) || continue
        kill -CONT "$pid" 2>/dev/null || true   # a test may have frozen it
        ctl "$n" stop > /dev/null 2>&1 || kill "$pid" 2>/dev/null || true
        echo "$pid" > "$BASE/rmq$n/rmq.stopping"
    done
    for n in $nodes; do
        pid=$(cat "$BASE/rmq$n/rmq.stopping" 2>/dev/null) || continue
        for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$BASE/rmq$n/rmq.pid" "$BASE/rmq$n/rmq.stopping"
    done
}

status() {
    local n
    for n in $NODES; do
        if running "$n"; then
            echo "rmq$n@localhost: pid $(cat "$BASE/rmq$n/rmq.pid"), 127.0.0.1:$((AMQP_PORT0 + n))"
        else
            echo "rmq$n@localhost: down"
        fi
    done
    running 1 && echo "running members: $(members | tr '\n' ' ')"
}

solo() {   # start|stop
    case "${1:-}" in
        start)
            prepare
            launch $SOLO
            await $SOLO
            echo "rabbit://guest:guest@127.0.0.1:$((AMQP_PORT0 + SOLO))/"
            ;;
        stop) stop $SOLO ;;
        *) echo "usage: $0 solo start|stop" >&2; exit 2 ;;
    esac
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    url) url ;;
    reset) stop $NODES $SOLO; rm -rf "$BASE" ;;
    solo) shift; solo "$@" ;;
    ctl) shift; ctl "$@" ;;
    *) echo "usage: $0 start|stop|status|url|reset|ctl N ARGS...|solo start|stop" >&2; exit 2 ;;
esac
