#!/usr/bin/env bash
# Download every locked runtime dependency (uv.lock, no dev group, with the `ray` extra) as
# linux/amd64 CPython 3.11 wheels, plus uv and the build backend, into DEST (default
# .wheelhouse): the service images then build with `--build-arg WHEELHOUSE=1` and no package
# index (air-gapped builders, or build containers that cannot reach the index). The image still
# checks every hash from uv.lock.
#
#   integrations/images/wheelhouse.sh [DEST]
# Needs uv (on PATH, as UV=..., or the one `make sync` puts in .tools/bin); pip runs through
# `uv tool run`, or set PIP="python3 -m pip".
set -euo pipefail
cd "$(dirname "$0")/../.."
dest="${1:-.wheelhouse}"
uv="${UV:-$(command -v uv || echo .tools/bin/uv)}"
[ -x "$uv" ] || { echo "wheelhouse.sh: uv not found (put it on PATH, set UV, or run make sync)" >&2; exit 2; }
read -r -a pip <<< "${PIP:-$uv tool run --quiet --from pip pip}"
dockerfile=worker/Dockerfile
uv_version="$(sed -n 's/^ARG UV_VERSION=//p' "$dockerfile")"
hatchling_version="$(sed -n 's/^ARG HATCHLING_VERSION=//p' "$dockerfile")"
mkdir -p "$dest"
requirements="$(mktemp)"
trap 'rm -f "$requirements"' EXIT
# With the `ray` extra: the worker image built with WITH_RAY=1 (a Ray node) installs it too.
"$uv" export --quiet --frozen --no-dev --no-emit-project --extra ray --output-file "$requirements"
platforms=()
for tag in manylinux1 manylinux2010 manylinux2014 manylinux_2_17 manylinux_2_24 manylinux_2_27 \
    manylinux_2_28 manylinux_2_31 manylinux_2_34 manylinux_2_36; do
    platforms+=(--platform "${tag}_x86_64")
done
target=(--only-binary=:all: "${platforms[@]}" --python-version 3.11 --implementation cp --abi cp311)
"${pip[@]}" download --quiet --no-deps "${target[@]}" --dest "$dest" -r "$requirements"
"${pip[@]}" download --quiet "${target[@]}" --dest "$dest" \
    "uv==${uv_version}" "hatchling==${hatchling_version}"
echo "$dest: $(find "$dest" -name '*.whl' | wc -l) wheels"
