#!/bin/sh
# Serve the REST shim as a user would, on a fresh embedded database, for
# Placement's gabbi runner (../shared/placement-gabbi/run_gabbits.py):
#   tools/placement-test-server.sh DIR PORT SQLITE_FILE [FIXTURES]
# noauth2 tokens; [oslo_policy] defaults. FIXTURES (the runner's {fixtures},
# comma-separated) naming CORSFixture turns CORS on as that fixture does.
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$1 port=$2 db=$3 fixtures=${4:-$PLACEMENT_GABBI_FIXTURES}
cat > "$dir/allocworker.conf" <<CONF
[DEFAULT]
state_path = $dir
log_file = $dir/allocworker-api.log
[database]
connection = sqlite:///$db
[api]
host = 127.0.0.1
port = $port
auth_strategy = noauth2
CONF
case ",$fixtures," in
*,CORSFixture,*) cat >> "$dir/allocworker.conf" <<CONF
[cors]
allowed_origin = http://valid.example.com
allow_headers = openstack-api-version
CONF
esac
"$here/.venv/bin/allocworker-manage" --config-file "$dir/allocworker.conf" \
    db sync >/dev/null
exec "$here/.venv/bin/allocworker-api" --config-file "$dir/allocworker.conf"
