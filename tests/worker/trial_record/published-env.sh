#!/bin/sh
# A test-only environment with a peer harness's published package, outside the repository:
#   tests/worker/trial_record/published-env.sh PACKAGE VERSION CLI [DIR]
#   (default DIR: ~/.cache/skillsbench-agentbeats/PACKAGE-VERSION)
# prints DIR on success (DIR/bin/CLI is the package's CLI). The packages (BenchFlow, Harbor) need
# Python >= 3.12: taken from PUBLISHED_PYTHON, python3.12/python3.13 on PATH, pyenv's versions,
# /usr/bin, else uv's own (`uv python install 3.12` when none is found). Made once, then reused
# (offline); a failed attempt leaves nothing half-made behind. Exits non-zero with one line on
# stderr when it cannot be made.
set -eu

if [ "$#" -lt 3 ]; then
    echo "usage: published-env.sh PACKAGE VERSION CLI [DIR]" >&2
    exit 2
fi
PACKAGE="$1"
VERSION="$2"
CLI="$3"
DIR="${4:-${XDG_CACHE_HOME:-$HOME/.cache}/skillsbench-agentbeats/$PACKAGE-$VERSION}"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"

if [ -f "$DIR/.complete" ] && [ -x "$DIR/bin/$CLI" ]; then
    echo "$DIR"
    exit 0
fi

UV="${UV:-$(command -v uv 2>/dev/null || true)}"
[ -n "$UV" ] || UV="$REPO/.tools/bin/uv"
if [ ! -x "$UV" ]; then
    echo "no uv to make the $PACKAGE environment with (run make sync)" >&2
    exit 1
fi

find_python() {
    for candidate in "${PUBLISHED_PYTHON:-${BENCHFLOW_PYTHON:-}}" python3.12 python3.13; do
        [ -n "$candidate" ] || continue
        found="$(command -v "$candidate" 2>/dev/null || true)"
        if [ -n "$found" ] && "$found" -c 'import sys; sys.exit(sys.version_info < (3, 12))' \
            >/dev/null 2>&1; then
            echo "$found"
            return 0
        fi
    done
    pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    for found in "$pyenv_root"/versions/3.12*/bin/python3.12 "$pyenv_root"/versions/3.13*/bin/python3.13 \
        /usr/bin/python3.12 /usr/bin/python3.13 /usr/local/bin/python3.12; do
        if [ -x "$found" ]; then
            echo "$found"
            return 0
        fi
    done
    return 1
}

mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9  # parallel test workers: one makes it, the others wait and reuse it
fi
if [ -f "$DIR/.complete" ] && [ -x "$DIR/bin/$CLI" ]; then
    echo "$DIR"
    exit 0
fi
rm -rf "$DIR"
LOG="$DIR.log"

PYTHON="$(find_python || true)"
if [ -z "$PYTHON" ]; then
    if ! "$UV" venv --quiet --python 3.12 "$DIR" >"$LOG" 2>&1; then
        UV_PYTHON_DOWNLOADS=automatic "$UV" python install 3.12 >>"$LOG" 2>&1 || true
        if ! UV_PYTHON_DOWNLOADS=automatic "$UV" venv --quiet --python 3.12 "$DIR" >>"$LOG" 2>&1; then
            rm -rf "$DIR"
            echo "no Python >= 3.12 for $PACKAGE (set PUBLISHED_PYTHON; see $LOG)" >&2
            exit 1
        fi
    fi
elif ! "$UV" venv --quiet --python "$PYTHON" "$DIR" >"$LOG" 2>&1; then
    rm -rf "$DIR"
    echo "could not make a venv with $PYTHON (see $LOG)" >&2
    exit 1
fi
if ! "$UV" pip install --quiet --python "$DIR/bin/python" "$PACKAGE==$VERSION" >>"$LOG" 2>&1; then
    rm -rf "$DIR"
    echo "could not install $PACKAGE==$VERSION from the package index (see $LOG)" >&2
    exit 1
fi
touch "$DIR/.complete"
echo "$DIR"
