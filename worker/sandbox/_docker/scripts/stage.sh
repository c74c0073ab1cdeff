# shellcheck shell=sh
# Runs after kill_all.sh in the same shell: kill_upload_exec in one exec.
# Arguments: $1 target, $2 stage folder, $3... the command.
# Stdin: a tar of files/ (the upload) and stdin (the command's stdin).
# Unpacks into a fresh stage, reports what of the old target the upload does not replace, swaps
# the target, then becomes the command with the staged stdin. The kill comes first, so no agent
# process sees the stage or the new target. Failures before the command exit 125 with a
# "skillsbench-stage-failed:" line on stderr (the docker backend reads it).
t=$1 s=$2
fail() { echo "skillsbench-stage-failed: $1" >&2; exit 125; }
# shellcheck disable=SC2015  # any step failing fails the stage (fail exits)
rm -rf "$s" && mkdir -m 700 "$s" && tar -xf - -C "$s" || fail "cannot unpack into $s"
if [ -L "$t" ] || { [ -e "$t" ] && [ ! -d "$t" ]; }; then
  { rm -f "$t" && echo "removed $t"; } || fail "cannot remove $t"
elif [ -d "$t" ]; then
  IFS='
'
  set -f
  # shellcheck disable=SC2044  # split on newlines only (IFS), globbing off
  for p in $(find "$t" -mindepth 1 -depth); do
    n="$s/files/${p#"$t"/}"
    if [ -L "$p" ] || { [ ! -e "$n" ] && [ ! -L "$n" ]; }; then echo "removed $p"; fi
  done
  set +f
  unset IFS
  rm -rf "$t" || fail "cannot clear $t"
fi
case $t in /*/*) mkdir -p "${t%/*}" || fail "cannot make the parent of $t" ;; esac
mv "$s/files" "$t" || fail "cannot move the upload to $t"
exec <"$s/stdin"  # (a failed redirection ends the shell: no reward, an error)
rm -rf "$s"
shift 2
exec "$@"
