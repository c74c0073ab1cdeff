# shellcheck shell=sh
# Library of the verifier's scripts: the plantable files (conftest.py, sitecustomize.py,
# usercustomize.py, *.pth: files that change how Python or pytest behave when merely present).
# Each function takes the folders searched recursively as its arguments; Python site dirs
# (their top level only: .pth files and site/usercustomize are read from the site dir itself)
# and root-level pytest config files are always looked at.
# Sets IFS to a newline (the callers split lists of paths on it).

# Fail closed: without a checksum tool every signature would be empty and nothing planted found.
if command -v cksum >/dev/null 2>&1; then checksum="cksum"
elif command -v sha256sum >/dev/null 2>&1; then checksum="sha256sum"
elif command -v md5sum >/dev/null 2>&1; then checksum="md5sum"
else echo "skillsbench: the sandbox has none of cksum, sha256sum, md5sum" >&2; exit 3
fi
nl='
'
# scan ROOT...: the plantable files, one per line.
scan() {
  set +f  # callers may have globbing off; the site-dir patterns need it
  find "$@" -xdev \( -name conftest.py -o -name sitecustomize.py -o -name usercustomize.py -o -name '*.pth' \) \( -type f -o -type l \) 2>/dev/null
  for s in /usr/lib/python3*/site-packages /usr/lib/python3*/dist-packages /usr/local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages /usr/lib64/python3*/site-packages /usr/local/lib64/python3*/site-packages /opt/*/lib/python3*/site-packages /opt/*/*/lib/python3*/site-packages; do
    [ -d "$s" ] || continue
    for f in "$s"/*.pth "$s"/sitecustomize.py "$s"/usercustomize.py; do
      if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
    done
  done
  for f in /conftest.py /pytest.ini /pyproject.toml /tox.ini /setup.cfg /sitecustomize.py /usercustomize.py; do if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done
}
# sigs ROOT...: one signature line per plantable file ("<cksum> <size> <path>", or "L <path>"
# for a symlink). Cheap on purpose, it runs in every trial: one find, shell globs for the site
# dirs and a single checksum run for all files.
sigs() {
  found=$(scan "$@" | sort -u)
  set -f
  regular=""
  for f in $found; do
    if [ -L "$f" ]; then echo "L $f"; elif [ -f "$f" ]; then regular="$regular
$f"; fi
  done
  # "<sum> <size> <path>" (cksum) or "<sum>  <path>": either way the path starts after the
  # second space.
  # shellcheck disable=SC2086  # $regular splits on the newline IFS, on purpose
  if [ -n "$regular" ]; then "$checksum" $regular 2>/dev/null; fi
  set +f
}
# drop_odd_names ROOT...: plantables whose paths hold a newline or a backslash cannot go
# through the line-based signature list intact (and Python still loads such a .pth): they are
# removed outright.
drop_odd_names() {
  set +f
  find "$@" -xdev \( -name conftest.py -o -name sitecustomize.py -o -name usercustomize.py -o -name '*.pth' \) \( -path "*$nl*" -o -path '*\\*' \) \
    \( -type f -o -type l \) -exec rm -f -- {} \; \
    -exec echo "removed a plantable file with a newline or backslash in its path" \; 2>/dev/null
  for s in /usr/lib/python3*/site-packages /usr/lib/python3*/dist-packages /usr/local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages /usr/lib64/python3*/site-packages /usr/local/lib64/python3*/site-packages /opt/*/lib/python3*/site-packages /opt/*/*/lib/python3*/site-packages; do
    for f in "$s"/*.pth; do
      case $f in
        *"$nl"*|*\\*) rm -f -- "$f" && echo "removed an odd-named .pth file in $s" ;;
      esac
    done
  done
}
IFS='
'
