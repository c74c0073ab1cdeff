#!/bin/sh
# Debian packages the test suite uses beyond Python: headless Chromium (the HTML report test) and
# the host packages the Docker test images are made from (tests/images/setup.sh).
set -eu
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: not root on Debian; skipping (tests needing these packages skip with a reason)"
  exit 0
fi
missing=""
for pkg in chromium busybox-static python3.11 bash debootstrap; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  sh tests/images/setup.sh
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
fi
