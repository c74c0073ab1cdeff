#!/usr/bin/env bash
# Download the wheels of the agent-under-test's PyPI harness CLIs, at purple_agent/Dockerfile's
# pins, into DEST (default .wheelhouse-clis): the purple image then installs HARNESS_CLIS with
# `--build-arg WHEELHOUSE=1` and no package index (air-gapped builders, or build containers that
# cannot reach the index). claude-code and codex are binaries in wheels for the image's own
# Python 3.11; openhands and terminus need CLI_PYTHON (3.12): their wheels are fetched for it.
# Each CLI's dependencies are resolved for the image's platform by uv; a dependency published
# only as a source archive (openhands needs func-timeout) is built into a wheel here, and must
# come out pure Python (py3-none-any), since it is built on this host for another interpreter.
#
#   integrations/images/cli-wheelhouse.sh [DEST] [CLI ...]    (default: claude-code codex)
# Needs uv (on PATH, as UV=..., or the one `make sync` puts in .tools/bin); pip runs through
# `uv tool run`, or set PIP="python3 -m pip".
set -euo pipefail
cd "$(dirname "$0")/../.."
dest="${1:-.wheelhouse-clis}"
shift || true
clis=("$@")
[ "${#clis[@]}" -gt 0 ] || clis=(claude-code codex)
uv="${UV:-$(command -v uv || echo .tools/bin/uv)}"
[ -x "$uv" ] || { echo "cli-wheelhouse.sh: uv not found (put it on PATH, set UV, or run make sync)" >&2; exit 2; }
read -r -a pip <<< "${PIP:-$uv tool run --quiet --from pip pip}"
dockerfile=purple_agent/Dockerfile
pin() { sed -n "s/^ARG $1=//p" "$dockerfile"; }
cli_python="$(pin CLI_PYTHON)"
platforms=()
for tag in manylinux1 manylinux2010 manylinux2014 manylinux_2_17 manylinux_2_24 manylinux_2_27 \
    manylinux_2_28 manylinux_2_31 manylinux_2_34 manylinux_2_36; do
    platforms+=(--platform "${tag}_x86_64")
done
mkdir -p "$dest"
for cli in "${clis[@]}"; do
    case "$cli" in
        claude-code) spec="claude-agent-sdk==$(pin CLAUDE_AGENT_SDK_VERSION)"; python=3.11 ;;
        codex) spec="openai-codex-cli-bin==$(pin CODEX_CLI_VERSION)"; python=3.11 ;;
        openhands) spec="openhands==$(pin OPENHANDS_VERSION)"; python="$cli_python" ;;
        terminus) spec="terminus-ai==$(pin TERMINUS_VERSION)"; python="$cli_python" ;;
        *) echo "cli-wheelhouse.sh: '$cli' is not a PyPI harness CLI (npm ones need the index)" >&2
           exit 2 ;;
    esac
    abi="cp${python//./}"
    requirements="$(mktemp)"
    "$uv" pip compile --quiet --no-header --no-annotate --python-version "$python" \
        --python-platform x86_64-manylinux_2_28 --output-file "$requirements" - <<< "$spec"
    "${pip[@]}" download --quiet --no-deps "${platforms[@]}" --python-version "$python" \
        --implementation cp --abi "$abi" --abi abi3 --abi none --dest "$dest" -r "$requirements"
    rm -f "$requirements"
done
# Source archives (no wheel on the index for this platform): built here, pure Python only.
for sdist in "$dest"/*.tar.gz "$dest"/*.zip; do
    [ -e "$sdist" ] || continue
    built="$(mktemp -d)"
    "$uv" build --quiet --wheel --out-dir "$built" "$sdist"
    for wheel in "$built"/*.whl; do
        case "$wheel" in
            *-py3-none-any.whl|*-py2.py3-none-any.whl) mv "$wheel" "$dest/" ;;
            *) echo "cli-wheelhouse.sh: $(basename "$sdist") has no wheel for the image and" \
                    "builds only for this host's Python ($(basename "$wheel"))" >&2
               exit 2 ;;
        esac
    done
    rm -rf "$built" "$sdist"
done
echo "$dest: $(find "$dest" -name '*.whl' | wc -l) wheels for ${clis[*]}"
