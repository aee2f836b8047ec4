#!/usr/bin/env bash
# Installs the Debian packages Bumper and its tests need (Debian 12, as root).
# .ci/run calls it; run it once on a fresh machine before `make test`.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# git: the emulator's smart-HTTP server (git http-backend) and the real git client.
# qemu-*, busybox-static, debootstrap, e2fsprogs, xz-utils (the kernel payload), file:
# microVM images and boots.
# nftables, iproute2: per-run network namespaces and the default-deny firewall.
# procps: pgrep, with which the sandbox tests check that no QEMU is left running.
# kmod: depmod, against which the image builder's own modules.dep is checked.
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  git ca-certificates make curl python3 \
  qemu-system-x86 qemu-utils busybox-static debootstrap e2fsprogs xz-utils file \
  nftables iproute2 procps kmod >/dev/null
