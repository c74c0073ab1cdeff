# shellcheck shell=sh
# Stop, then kill, every process of the container but its init (init.sh) and this shell.
# `kill -STOP -1` stops them all in one system call (a fork racing with it fails), so a process
# that forks and exits over and over cannot slip between the pids listed and the pids signalled;
# the passes over /proc then kill what is stopped (and stop what a shell without a kill builtin
# could not). The init's sleep dies too; the init starts another.
if [ "$(command -v kill)" = kill ]; then kill -STOP -1 2>/dev/null; fi
for sig in STOP KILL; do
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case $p in 1|"$$") ;; *) kill -s "$sig" "$p" 2>/dev/null ;; esac
  done
done
true
