#!/usr/bin/env bash
# Run the whole test suite: unit and functional tests (real RabbitMQ,
# PostgreSQL, MariaDB and SQLite) in two processes, then the fault suite
# (which restarts PostgreSQL, MariaDB and brokers of its own) alone. Makes
# ./.venv on first use and starts any service that is not running.
# Extra arguments go to pytest, e.g. tools/test.sh -k allocate
set -uo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh || exit 1
tools/ensure-services.sh || exit 1

run() {
    .venv/bin/python -m pytest -p no:cacheprovider -q -ra "$@"
    local rc=$?
    [ $rc -eq 5 ] && rc=0   # a -k that selects nothing here is not a failure
    return $rc
}

run -n "${AW_TEST_PROCESSES:-2}" --dist loadscope tests/unit tests/functional \
    "$@"
main=$?
run tests/faults "$@"
faults=$?
[ $main -eq 0 ] && [ $faults -eq 0 ]
