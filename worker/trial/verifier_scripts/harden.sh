# shellcheck shell=sh disable=SC2154  # nl and the functions come from plantables.sh and tests.sh
# After plantables.sh and tests.sh. Once the agent is stopped and tests/ uploaded: remove what
# the agent planted, leave the tests folder holding exactly the task's tests, make the workdir
# again if it is gone, reset the verifier logs; then either exit or run the tests in the same
# process, from the workdir. Runs from /: the workdir may be missing.
# Arguments: $1 "test" (run the tests once hardened) or "exit"; $2 the workdir; $3 the tests
# folder; $4 the logs folder; $5 the verifier logs folder; $6 the line that ends the snapshot on
# stdin; $7 what to print once hardened; $8... the folders searched for plantables.
# Stdin: the snapshot (snapshot.sh's output), the line $6, then the tests' relative paths.
after=$1 w=$2 t=$3 logs=$4 v=$5 tests_mark=$6 hardened_mark=$7
shift 7
drop_odd_names "$@"
input=$(cat)
before="${input%%"$tests_mark"*}"
expected="$nl${input#*"$tests_mark""$nl"}$nl"
set -f
for line in $(sigs "$@" | grep -vxF -f /dev/fd/3 3<<SKILLSBENCH_SNAPSHOT
$before
SKILLSBENCH_SNAPSHOT
); do
  case "$line" in
    "L "*) f="${line#L }" ;;
    *) f="${line#* }"; f="${f#* }" ;;
  esac
  rm -rf -- "$f" && echo "removed $f"
done
if [ -L "$t" ]; then rm -f "$t" && echo "removed $t"; fi
if [ -d "$t" ]; then
  # shellcheck disable=SC2044  # split on newlines only (IFS), globbing off
  for p in $(find "$t" -mindepth 1 -depth 2>/dev/null); do
    rel="${p#"$t"/}"
    if [ -L "$p" ]; then rm -f -- "$p" && echo "removed $p"; continue; fi
    case "$expected" in
      *"$nl$rel$nl"*) ;;
      *) rm -rf -- "$p" && echo "removed $p" ;;
    esac
  done
fi
set +f
# The workdir is where the tests run (and a later exec's cwd): one the agent removed is made
# again, so that the verifier starts (an exec into a missing cwd fails before it runs).
if [ ! -d "$w" ]; then
  if [ -e "$w" ] || [ -L "$w" ]; then rm -f "$w" && echo "removed $w"; fi
  mkdir -p "$w"
fi
# The logs folders are folders again (not links, files or locked away) and the verifier's is
# empty: what the agent did to them must not keep test.sh from writing the reward nor the
# worker from reading it.
for d in "$logs" "$v"; do
  if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then rm -f "$d"; fi
  [ -d "$d" ] || mkdir "$d"
done
chmod 755 "$logs"
chmod 777 "$v"
for f in "$v"/* "$v"/.[!.]* "$v"/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then rm -rf -- "$f"; fi; done
echo "$hardened_mark"
if [ "$after" = test ]; then
  cd "$w" 2>/dev/null || cd /
  run_tests "$t" "$v"
fi
exit 0
