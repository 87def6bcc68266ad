#!/usr/bin/env bash
# A Prometheus of our own for tests and for trying the shipped files, never
# the system service: loopback only, its config, data and pid file under a
# directory of the caller's choosing.
#
#   tools/prometheus.sh install              # from Debian's packages, when missing
#   tools/prometheus.sh start DIR PORT CONFIG   # waits until it is ready
#   tools/prometheus.sh stop DIR
#   tools/prometheus.sh check                # promtool on etc/prometheus/
#
# Debian's package ships a service, which this script never starts (and
# which apt-get starts nowhere here: no init system runs services).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "prometheus.sh: $*" >&2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install() {
    if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
        return 0
    fi
    say "installing prometheus from Debian packages"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends prometheus >/dev/null
}

start() {  # DIR PORT CONFIG
    local dir=$1 port=$2 config=$3 i
    install
    mkdir -p "$dir/data"
    prometheus --config.file="$config" \
        --storage.tsdb.path="$dir/data" \
        --web.listen-address="127.0.0.1:$port" \
        --web.enable-lifecycle \
        --log.level=warn >"$dir/prometheus.log" 2>&1 &
    echo $! >"$dir/prometheus.pid"
    for ((i = 0; i < 120; i++)); do
        if python3 - "$port" <<'PY' 2>/dev/null; then return 0; fi
import sys, urllib.request
urllib.request.urlopen('http://127.0.0.1:%s/-/ready' % sys.argv[1],
                       timeout=1)
PY
        if ! kill -0 "$(cat "$dir/prometheus.pid")" 2>/dev/null; then
            say "prometheus exited:"; cat "$dir/prometheus.log" >&2
            return 1
        fi
        sleep 0.5
    done
    say "prometheus not ready on 127.0.0.1:$port after 60 s"
    return 1
}

stop() {  # DIR
    local pidfile=$1/prometheus.pid pid i
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 60; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

check() {
    install
    promtool check rules etc/prometheus/alerts.yml
    promtool test rules etc/prometheus/alerts_test.yml
}

case "${1:-}" in
    install) install ;;
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    check) check ;;
    *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
