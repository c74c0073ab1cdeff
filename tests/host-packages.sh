#!/bin/sh
# Host packages the test suite uses beyond Python, made ready by `make test` itself.
#   busybox-static  the shell and tools of every Docker test image (tests/support/docker_images.py)
#   python3.11 bash copied into the "python" Docker test image
#   debootstrap     the Debian rootfs of the service images' Python base (integrations/agentbeats/base_image.py)
#   chromium        headless rendering of the HTML report (tests/leaderboard/test_report.py)
#   chromium-driver the WebDriver Selenium drives Chromium with (tests/worker/viewer/test_web_browser.py)
#   tmux            the terminus CLI run by the agent-under-test (tests/purple_agent/test_real_clis.py)
# As root on Debian or Ubuntu the missing ones are installed; anywhere else (or when installing
# fails, or with SKILLSBENCH_NO_HOST_PACKAGES=1) this only says what is missing, and every test
# that needs a missing package skips with a reason naming it. It never fails the test run.
set -u
PACKAGES="busybox-static python3.11 bash debootstrap chromium chromium-driver tmux"

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "host-packages: not a Debian/Ubuntu host; tests needing $PACKAGES skip where they are missing"
  exit 0
fi
missing=""
for pkg in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
if [ "${SKILLSBENCH_NO_HOST_PACKAGES:-0}" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "host-packages: missing:$missing (install them as root: apt-get install$missing);" \
    "the tests that need them skip, naming the package"
  exit 0
fi
echo "host-packages: installing$missing"
apt-get update -qq || echo "host-packages: apt-get update failed; trying the lists already here"
installable=""
for pkg in $missing; do
  if apt-cache show "$pkg" >/dev/null 2>&1; then
    installable="$installable $pkg"
  else
    echo "host-packages: $pkg is not in this host's package lists; the tests that need it skip"
  fi
done
if [ -n "$installable" ]; then
  # shellcheck disable=SC2086  # a list of package names
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $installable \
    || echo "host-packages: installing$installable failed; the tests that need them skip"
fi
exit 0
