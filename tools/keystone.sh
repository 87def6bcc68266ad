#!/bin/sh
# A real Keystone (30.0.0, unified limits) for the project-limit tests and
# benchmarks, from PyPI into a venv of its own, on SQLite, on loopback:
#
#   tools/keystone.sh install         the venv (reused when present)
#   tools/keystone.sh template        a bootstrapped Keystone to copy
#                                     (reused when present); prints its dir
#   tools/keystone.sh serve DIR PORT  a copy of the template in DIR (made
#                                     unless DIR has one), served on
#                                     127.0.0.1:PORT in the foreground
#
# The template holds keystone.conf, the SQLite database, the fernet and
# credential keys, and ids.env: the admin password, the region, and the
# service and endpoint whose limits allocworker reads ([oslo_limit]
# endpoint_id). Bootstrapping takes minutes on a busy machine, so it is
# done once and each test copies the result.
#
# AW_KEYSTONE_VENV (default .venv-keystone) and AW_KEYSTONE_TEMPLATE
# (default .keystone-template) move them, e.g. to share between
# worktrees.
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${AW_KEYSTONE_VENV:-$here/.venv-keystone}
template=${AW_KEYSTONE_TEMPLATE:-$here/.keystone-template}
KEYSTONE=keystone==30.0.0
OSLO_LIMIT=oslo.limit==2.12.0
PASSWORD=aw-keystone-admin

install() {
    if [ -x "$venv/bin/keystone-manage" ]; then
        return
    fi
    python3 -m venv --clear "$venv"  # a venv left half-made starts over
    "$venv/bin/pip" install -q --disable-pip-version-check \
        "$KEYSTONE" "$OSLO_LIMIT"
}

write_conf() {  # DIR
    cat > "$1/keystone.conf" <<CONF
[DEFAULT]
log_file = $1/keystone.log
[database]
connection = sqlite:///$1/keystone.sqlite
[fernet_tokens]
key_repository = $1/fernet-keys
[fernet_receipts]
key_repository = $1/fernet-keys
[credential]
key_repository = $1/credential-keys
[identity]
password_hash_rounds = 4
[unified_limit]
enforcement_model = flat
CONF
}

manage() {  # DIR ARGS...
    dir=$1
    shift
    "$venv/bin/keystone-manage" --config-file "$dir/keystone.conf" "$@"
}

make_template() {
    if [ ! -f "$template/ids.env" ]; then
        mkdir -p "$(dirname "$template")"
        # Test processes running side by side wait for one another here.
        ( flock 9; [ -f "$template/ids.env" ] || build_template ) \
            9>"$template.lock"
    fi
}

build_template() {
    install
    work="$template.partial"
    rm -rf "$work"
    mkdir -p "$work/fernet-keys" "$work/credential-keys"
    write_conf "$work"
    whoami=$(id -un)
    group=$(id -gn)
    manage "$work" db_sync
    manage "$work" fernet_setup --keystone-user "$whoami" \
        --keystone-group "$group"
    manage "$work" credential_setup --keystone-user "$whoami" \
        --keystone-group "$group"
    manage "$work" bootstrap --bootstrap-password "$PASSWORD" \
        --bootstrap-region-id RegionOne \
        --bootstrap-public-url http://127.0.0.1:5000/v3
    # The service whose limits allocworker reads, and its endpoint.
    "$venv/bin/python" - "$work" <<'PY'
import sqlite3
import sys
import uuid

work = sys.argv[1]
db = sqlite3.connect(work + '/keystone.sqlite')
service, endpoint = uuid.uuid4().hex, uuid.uuid4().hex
db.execute("INSERT INTO service (id, type, enabled, extra) "
           "VALUES (?, 'allocworker', 1, '{\"name\": \"allocworker\"}')",
           (service,))
db.execute("INSERT INTO endpoint (id, legacy_endpoint_id, interface, "
           "service_id, url, extra, enabled, region_id) VALUES "
           "(?, NULL, 'public', ?, 'http://127.0.0.1:8778', '{}', 1, "
           "'RegionOne')", (endpoint, service))
db.commit()
with open(work + '/ids.env', 'w') as out:
    out.write('SERVICE_ID=%s\nENDPOINT_ID=%s\nREGION_ID=RegionOne\n'
              'ADMIN_PASSWORD=aw-keystone-admin\n' % (service, endpoint))
PY
    rm -rf "$template"
    mv "$work" "$template"
}

serve() {  # DIR PORT
    dir=$1 port=$2
    make_template
    if [ ! -f "$dir/keystone.sqlite" ]; then
        mkdir -p "$dir"
        cp -r "$template/fernet-keys" "$template/credential-keys" \
            "$template/keystone.sqlite" "$template/ids.env" "$dir/"
    fi
    write_conf "$dir"
    OS_KEYSTONE_CONFIG_DIR=$dir exec "$venv/bin/python" \
        "$here/tools/keystone_server.py" "$port"
}

case "$1" in
install) install ;;
template) make_template; echo "$template" ;;
serve) serve "$2" "$3" ;;
*) echo "usage: $0 install | template | serve DIR PORT" >&2; exit 2 ;;
esac
