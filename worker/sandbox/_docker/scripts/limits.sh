# shellcheck shell=sh
# How often this container hit its limits, read from its own cgroup files (read-only inside the
# container) with shell builtins only, so that it works when no process can be forked. Prints
# "<oom kills> <forks refused>": processes the kernel killed at the memory limit (cgroup v1
# memory.oom_control or v2 memory.events) and forks refused at the process limit (pids.events).
limit_counts() {
  limit_oom=0
  limit_pids=0
  for limit_file in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    if [ -r "$limit_file" ]; then
      while read -r limit_key limit_value; do
        if [ "$limit_key" = oom_kill ]; then limit_oom=$limit_value; fi
      done < "$limit_file"
    fi
  done
  for limit_file in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do
    if [ -r "$limit_file" ]; then
      while read -r limit_key limit_value; do
        if [ "$limit_key" = max ]; then limit_pids=$limit_value; fi
      done < "$limit_file"
    fi
  done
  printf '%s %s\n' "$limit_oom" "$limit_pids"
}
