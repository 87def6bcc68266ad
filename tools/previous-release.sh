#!/usr/bin/env bash
# Install an earlier release of allocworker, exported with `git archive`
# from this clone's own history, into a venv of its own:
#
#   tools/previous-release.sh COMMIT     # prints the venv's bin directory
#
# Cached under .venv-previous/COMMIT (gitignored), so a second run costs
# nothing. Exits 3 when the clone does not hold COMMIT (a shallow clone).
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$1
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "commit $commit is not in this clone's history" \
        "(shallow: $(git rev-parse --is-shallow-repository))" >&2
    exit 3
fi
full=$(git rev-parse "$commit^{commit}")
home=.venv-previous/$full
stamp=$home/.installed
if [ ! -f "$stamp" ]; then
    rm -rf "$home"
    mkdir -p "$home/src"
    git archive "$full" | tar -x -C "$home/src"
    python3 -m venv "$home/venv"
    "$home/venv/bin/pip" install -q --disable-pip-version-check \
        -c "$home/src/constraints.txt" "$home/src" > "$home/install.log" 2>&1 \
        || { cat "$home/install.log" >&2; exit 1; }
    touch "$stamp"
fi
echo "$PWD/$home/venv/bin"
