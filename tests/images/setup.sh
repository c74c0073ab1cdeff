#!/bin/sh
# Host packages the Docker test images are made from (tests/docker_images.py), on Debian/Ubuntu.
# busybox-static: the shell and tools of every test image; python3.11 and bash: copied into the
# "python" test image; debootstrap: the Debian rootfs of the Python base the service images build
# from (tests/images/python_base.py). Run as root (CI: sudo sh tests/images/setup.sh).
set -eu
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends busybox-static python3.11 bash debootstrap
