#!/usr/bin/env bash
# Run the whole test suite: unit, functional (real RabbitMQ, PostgreSQL,
# MariaDB and SQLite) and the benchmark harness's smoke check.
# Makes ./.venv on first use and starts any service that is not running.
# Extra arguments go to pytest, e.g. tools/test.sh -k allocate
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
tools/ensure-services.sh
exec .venv/bin/python -m pytest -n "${AW_TEST_PROCESSES:-2}" --dist loadscope \
    -p no:cacheprovider -q -ra "$@"
