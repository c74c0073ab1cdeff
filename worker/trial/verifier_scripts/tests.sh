# shellcheck shell=sh
# run_tests TESTS_DIR VERIFIER_LOGS_DIR: run the task's test.sh, its output in the logs, and exit
# with its status. Its exit decides the reward: right then every other process this shell may
# signal is stopped and killed (graded code that forked a daemon cannot rewrite a reward file
# after the verifier wrote it), each reported first as "skillsbench-survivor <pid> <command>";
# then "skillsbench-verdict <status>" says this shell lived to the end (graded code that killed
# it to keep its daemon alive leaves no such line).
# Only where this shell is the top of its sandbox's process tree (its parent outside, or the
# namespace's init): elsewhere the backend ends the command's namespace with it.
run_tests() {
  chmod +x "$1/test.sh" 2>/dev/null
  "$1/test.sh" > "$2/test-stdout.txt" 2>&1
  rc=$?
  case $PPID in 0 | 1) stop_the_rest ;; esac
  echo "skillsbench-verdict $rc"
  exit "$rc"
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
