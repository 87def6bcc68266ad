#!/usr/bin/env bash
# Make sure RabbitMQ, PostgreSQL and MariaDB answer on 127.0.0.1, the way
# the test suite and the local worker expect them:
#   RabbitMQ  :5672  guest/guest
#   PostgreSQL:5432  role "root" (superuser), trust auth on 127.0.0.1
#   MariaDB   :3306  root with an empty password
# A service that is not running is started; one that is not installed is
# installed from Debian's packages first (needs root). Pass service names
# (rabbitmq postgresql mariadb) to check only those.
set -euo pipefail

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(rabbitmq postgresql mariadb)

say() { echo "ensure-services: $*" >&2; }

listening() {  # port
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

wait_for() {  # name port seconds
    local i
    for ((i = 0; i < $3 * 2; i++)); do
        listening "$2" && return 0
        sleep 0.5
    done
    say "$1 did not come up on port $2 within $3 s"
    return 1
}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    say "installing $* from Debian packages"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

ensure_rabbitmq() {
    listening 5672 && return 0
    command -v rabbitmq-server >/dev/null || apt_install rabbitmq-server
    say "starting RabbitMQ"
    as_root rabbitmq-server -detached >/dev/null 2>&1 || true
    wait_for RabbitMQ 5672 90
}

ensure_postgresql() {
    if ! listening 5432; then
        ls /etc/postgresql/*/main >/dev/null 2>&1 || apt_install postgresql
        local version
        version=$(ls /etc/postgresql | sort -V | tail -n 1)
        say "starting PostgreSQL $version"
        as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start \
            || true
        wait_for PostgreSQL 5432 60
    fi
    if ! psql -h 127.0.0.1 -U root -d postgres -Atc 'SELECT 1' \
            >/dev/null 2>&1; then
        say "configuring PostgreSQL: role root, trust auth on 127.0.0.1"
        local hba
        hba=$(as_root su postgres -c "psql -Atc 'SHOW hba_file'")
        as_root sed -i -E \
            's/^(host\s+all\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+)\S+/\1trust/' \
            "$hba"
        as_root su postgres -c "psql -Atc 'SELECT pg_reload_conf()'" >/dev/null
        as_root su postgres -c \
            "psql -Atc \"DO \\\$\\\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'root') THEN CREATE ROLE root SUPERUSER LOGIN; END IF; END\\\$\\\$\"" \
            >/dev/null
    fi
}

ensure_mariadb() {
    if ! listening 3306; then
        command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] \
            || apt_install mariadb-server
        say "starting MariaDB"
        as_root mkdir -p /run/mysqld
        as_root chown mysql:mysql /run/mysqld 2>/dev/null || true
        as_root start-stop-daemon --start --oknodo --background \
            --exec /usr/sbin/mariadbd
        wait_for MariaDB 3306 60
    fi
    if ! mysql -h 127.0.0.1 -uroot -e 'SELECT 1' >/dev/null 2>&1; then
        say "configuring MariaDB: root with an empty password on 127.0.0.1"
        as_root mysql -uroot -e \
            "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD(''); CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;"
    fi
}

for service in "${want[@]}"; do
    "ensure_$service"
done
