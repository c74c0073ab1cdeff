# shellcheck shell=sh
# Sandbox.apply_changes: on a fresh sandbox, as root, remove what the agent deleted (stdin: one
# path a line), then unpack its work product (the tar at $1) at /, keeping owners and modes.
# Exit: tar's (what could not be written is on stderr); the tar is removed either way.
a=$1
while IFS= read -r p; do
  case $p in /?*) rm -rf -- "$p" ;; esac
done
tar -xpf "$a" -C /
rc=$?
rm -f -- "$a"
exit $rc
