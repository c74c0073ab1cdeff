# shellcheck shell=sh
# run_tests TESTS_DIR VERIFIER_LOGS_DIR: run the task's test.sh, its output in the logs, and exit
# with its status. Graded code (a module the tests import, forking a daemon) must not change the
# reward once the verifier decides it:
# - while test.sh runs, a bash test.sh carries a guard (reward_guard, through BASH_ENV): right
#   before each of its own commands that names a reward file (literally or through a variable),
#   every other process is stopped (test.sh's parent continued, its own children killed), and a
#   FIFO or link in a reward file's place is removed, so
#   the write that follows is test.sh's and nothing can change it afterwards;
# - when test.sh exits, every other process this shell may signal is stopped and killed, each
#   reported first as "skillsbench-survivor <pid> <command>" (only where this shell is the top
#   of its sandbox's process tree: its parent outside, or the namespace's init; elsewhere the
#   backend ends the command's namespace with it);
# - then "skillsbench-verdict <status>" says this shell lived to the end (graded code that
#   killed it to keep its daemon alive leaves no such line).
run_tests() {
  chmod +x "$1/test.sh" 2>/dev/null
  logs=$2
  # test.sh runs from memory, not from its file: a shell reads a script file as it goes, so
  # graded code that wrote into /tests/test.sh (or through /proc/<shell>/fd/255) would choose
  # the commands test.sh runs next. A shell's script is read once here and handed over with -c
  # ($0 stays its path); any other interpreter, or a script past -c's size, runs from its file.
  how=$(script_shell "$1/test.sh")
  text=
  if [ -n "$how" ] && [ "$(wc -c <"$1/test.sh")" -le 100000 ]; then text=$(cat "$1/test.sh"); fi
  if [ -n "$text" ]; then
    set -f
    # shellcheck disable=SC2086 # the shell and its one option, as the #! line gives them
    set -- $how -c "$text" "$1/test.sh"
    set +f
  else
    set -- "$1/test.sh"
  fi
  guard=$(mktemp /tmp/.skillsbench-guard-XXXXXXXX 2>/dev/null) && reward_guard >"$guard"
  if [ -n "$guard" ]; then
    BASH_ENV=$guard SKILLSBENCH_GUARD_PARENT=$$ SKILLSBENCH_GUARD_DIR=$logs \
      "$@" >"$logs/test-stdout.txt" 2>&1
  else
    "$@" >"$logs/test-stdout.txt" 2>&1
  fi
  rc=$?
  case $PPID in 0 | 1) stop_the_rest ;; esac
  rm -f -- "$guard"
  echo "skillsbench-verdict $rc"
  exit "$rc"
}
# The shell a script's #! line names, with its one option ("bash", "/bin/sh -e"); "sh" for no
# #! line (the kernel refuses such a file and a shell runs it as sh); nothing for another
# interpreter.
script_shell() {
  first=$(head -c 256 "$1" 2>/dev/null | head -n 1)
  case $first in
    '#!'*) ;;
    *)
      echo sh
      return
      ;;
  esac
  set -f
  # shellcheck disable=SC2086 # the #! line's words
  set -- ${first#??}
  set +f
  if [ "${1##*/}" = env ]; then
    shift
    if [ "${1:-}" = -S ]; then shift; fi
  fi
  case ${1##*/} in
    bash | sh | dash | ash | ksh) echo "$@" ;;
  esac
}
# The guard, read by test.sh's own bash at its start (bash reads $BASH_ENV; sh and dash do not).
reward_guard() {
  cat <<'GUARD'
if [ "$PPID" = "${SKILLSBENCH_GUARD_PARENT:-}" ]; then
  __skillsbench_main=$$ __skillsbench_dir=$SKILLSBENCH_GUARD_DIR
  unset BASH_ENV SKILLSBENCH_GUARD_PARENT SKILLSBENCH_GUARD_DIR
  set -o functrace
  # Whether the command names a reward file through a variable (`echo 0 > "$REWARD_FILE"`):
  # bash shows the command unexpanded.
  __skillsbench_by_variable() {
    local __rest=$BASH_COMMAND __re='\$\{?([A-Za-z_][A-Za-z0-9_]*)' __name
    while [[ $__rest =~ $__re ]]; do
      __name=${BASH_REMATCH[1]}
      case ${!__name-} in *reward.txt* | *reward.json*) return 0 ;; esac
      __rest=${__rest#*"${BASH_REMATCH[0]}"}
    done
    return 1
  }
  __skillsbench_guard() {
    [ "$BASHPID" = "$__skillsbench_main" ] || return 0
    case $BASH_COMMAND in
      *reward.txt* | *reward.json*) ;;
      *'$'*) __skillsbench_by_variable || return 0 ;;
      *) return 0 ;;
    esac
    local IFS=$' \t\n' __pids __parents __doomed __grew __p __d __k __v __f
    kill -STOP -1 2>/dev/null || :
    kill -CONT "$PPID" 2>/dev/null || :
    # Every child of test.sh's (`npm start &`, the agent's app, a clone of it made its child, an
    # app it disowned) ends here with everything below it: the tests that used them have ended,
    # and one left running could rewrite the reward after this write. Killed, not stopped, so
    # that a later `kill $PID`, `wait` or `kill -0` loop of test.sh's ends at once; a broken
    # pipe (its output through a `>(tee ...)`) no longer ends test.sh. What the graded code
    # detached is no child of test.sh's: it stays stopped.
    trap '' PIPE
    __pids=
    __parents=
    for __d in /proc/[0-9]*; do
      while read -r __k __v; do
        if [ "$__k" = PPid: ]; then
          __pids="$__pids ${__d#/proc/}"
          __parents="$__parents $__v"
          break
        fi
      done <"$__d/status" 2>/dev/null || :
    done
    __doomed=" $__skillsbench_main "
    __grew=1
    while [ "$__grew" = 1 ]; do
      __grew=0
      set -- $__parents
      for __p in $__pids; do
        case $__doomed in *" $1 "*) case $__doomed in *" $__p "*) ;; *) __doomed="$__doomed$__p "; __grew=1 ;; esac ;; esac
        shift
      done
    done
    for __p in $__doomed; do
      [ "$__p" = "$__skillsbench_main" ] || kill -KILL "$__p" 2>/dev/null || :
    done
    for __f in "$__skillsbench_dir/reward.txt" "$__skillsbench_dir/reward.json"; do
      if [ -L "$__f" ] || { [ -e "$__f" ] && [ ! -f "$__f" ]; }; then rm -rf -- "$__f" || :; fi
    done
    return 0
  }
  # its own commands never in test.sh's `set -x` trace (on the stderr it redirects)
  trap '{ __skillsbench_guard; } 2>/dev/null' DEBUG
fi
GUARD
}
stop_the_rest() {
  kill -STOP -1 2>/dev/null
  n=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case $p in 1 | "$$") continue ;; esac
    cmd=$(tr '\000' ' ' <"$d/cmdline" 2>/dev/null | cut -c1-200)
    pp=$(sed -n 's/^PPid:[[:space:]]*//p' "$d/status" 2>/dev/null)
    case "$pp:$cmd" in *: | "1:sleep 86400 ") continue ;; esac
    n=$((n + 1))
    if [ "$n" -le 20 ]; then echo "skillsbench-survivor $p $cmd"; fi
  done
  kill -KILL -1 2>/dev/null
}
