#!/usr/bin/env bash
# Start allocworker on its embedded defaults: SQLite under ./.state, the
# local RabbitMQ (started if it is not running), one worker process on the
# topic "allocworker". Ctrl-C (or SIGTERM) stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
tools/ensure-services.sh rabbitmq
mkdir -p .state
conf=.state/allocworker.conf
if [ ! -f "$conf" ]; then
    cat > "$conf" <<CONF
[DEFAULT]
state_path = $PWD/.state
transport_url = rabbit://guest:guest@127.0.0.1:5672/
CONF
fi
.venv/bin/allocworker-manage --config-file "$conf" db sync
exec .venv/bin/allocworker-worker --config-file "$conf" "$@"
