#!/bin/sh
# HAProxy's external check for a Galera node, installed by
# tools/galera-cluster.sh (which replaces @BASE@ with its state directory).
# $3 and $4 are the node's address and port.
#
# Healthy only when the node is Synced and in the Primary Component: a
# donor, a joiner or a node cut off from the others still accepts TCP and
# the MySQL handshake, but must get no traffic.
#
# For the writer listener, one node at a time: the one named in
# @BASE@/writer, until HAProxy marks it down; then the first healthy node
# to be checked claims the place. A node that comes back therefore stays a
# standby: no second, unplanned failover back to it. (HAProxy's stick
# tables keep the first server they stored, so they would fail back.)
BASE=@BASE@
state=$(timeout 2 mariadb --no-defaults -uroot -h "$3" -P "$4" \
    --connect-timeout=1 -N -B -e "SELECT
        (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
         WHERE VARIABLE_NAME = 'wsrep_local_state_comment'),
        (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
         WHERE VARIABLE_NAME = 'wsrep_cluster_status')" 2>/dev/null)
[ "$state" = "$(printf 'Synced\tPrimary')" ] || exit 1
[ "$HAPROXY_PROXY_NAME" = galera_writer ] || exit 0
exec 9>> "$BASE/writer.lock"
flock 9
writer=$(cat "$BASE/writer" 2>/dev/null)
[ "$writer" = "$HAPROXY_SERVER_NAME" ] && exit 0
if [ -n "$writer" ]; then
    # HAProxy's own view of the writer, after its fall count: column 6 of
    # "show servers state" is 2 while the server runs. No answer: no claim.
    up=$(echo "show servers state galera_writer" |
        socat -t 2 stdio "unix-connect:$BASE/haproxy.sock" 2>/dev/null |
        awk -v w="$writer" '$4 == w { print $6 }')
    [ -n "$up" ] && [ "$up" != 2 ] || exit 1
fi
echo "$HAPROXY_SERVER_NAME" > "$BASE/writer"
