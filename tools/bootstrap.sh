#!/usr/bin/env bash
# Create ./.venv and install allocworker with its test dependencies, pinned
# by constraints.txt so every machine runs the same library versions.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
stamp=.venv/.allocworker-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ] || \
        [ constraints.txt -nt "$stamp" ]; then
    .venv/bin/pip install -q --disable-pip-version-check \
        -c constraints.txt -e '.[test]'
    touch "$stamp"
fi
