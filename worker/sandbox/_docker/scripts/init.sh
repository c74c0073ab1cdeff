# shellcheck shell=sh
# PID 1 of every container: it never exits by itself and nothing inside can end it.
# Inside its own PID namespace an init receives only the signals it has a handler for (never
# SIGKILL or SIGSTOP): this shell ignores the ones a shell may handle, so `kill -9 1`,
# `kill -TERM 1` or `kill -9 -1` from inside leave it running. Its child `sleep` is the only
# thing a kill can end, and the loop starts another. While it waits, the shell reaps every
# child, the processes that execs leave behind (reparented to PID 1) included. Should sleep be
# gone (an agent may delete it), the shell blocks reading its stdin, a pipe nobody writes to.
trap '' HUP INT QUIT PIPE ALRM TERM USR1 USR2
while :; do
  sleep 86400 &
  wait $!
  case $? in 126 | 127) read -r _ || sleep 1 ;; esac
done
