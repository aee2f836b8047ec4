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
# chromium, fonts-dejavu-core: the headless browser the emulator's web-view test drives
# (ghemu, through chromedp), and a font for its screenshot.
packages="git ca-certificates make curl python3
  qemu-system-x86 qemu-utils busybox-static debootstrap e2fsprogs xz-utils file
  nftables iproute2 procps kmod chromium fonts-dejavu-core"
# `make demo` and `make test` call this script every time: when every package is
# installed it skips apt (no update, no network), so it costs well under a second.
# shellcheck disable=SC2086
missing=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' $packages 2>&1 | grep -v ' installed$' || true)
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] || { echo "install-deps: missing Debian packages; run scripts/install-deps.sh as root" >&2; exit 1; }
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $packages >/dev/null
fi

# The real agent CLIs, for the tests that run them on the host (action/harness,
# internal/scriptedmodel; testgate.AgentCLI looks in this directory): their linux-x64
# builds from the npm registry, at the releases action/harness/versions.go pins (a test
# keeps these equal). npm pack checks each tarball against the registry's integrity.
# The end-to-end tests need none of this: the runner fetches the CLI into its image.
CLAUDE_CODE_VERSION=2.1.328
CODEX_VERSION=0.171.0
clis=/var/tmp/bumper-test-clis
# Binaries the tests run as root: a directory someone else made is not trusted.
if [ -e "$clis" ] && [ "$(stat -c %u "$clis")" != 0 ]; then rm -rf "$clis"; fi
if [ ! -x "$clis/claude-$CLAUDE_CODE_VERSION" ] || [ ! -x "$clis/codex-$CODEX_VERSION" ] || [ ! -x "$clis/codex-code-mode-host" ]; then
  [ "$(id -u)" = 0 ] || { echo "install-deps: the agent CLIs are missing from $clis; run scripts/install-deps.sh as root" >&2; exit 1; }
  command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends npm >/dev/null
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "@anthropic-ai/claude-code-linux-x64@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION-linux-x64" >/dev/null)
  mkdir -p "$clis"
  tar -xzf "$work/anthropic-ai-claude-code-linux-x64-$CLAUDE_CODE_VERSION.tgz" -C "$work" package/claude
  install -m 0755 "$work/package/claude" "$clis/claude-$CLAUDE_CODE_VERSION"
  # codex runs its code-mode host from beside its own binary.
  tar -xzf "$work/openai-codex-$CODEX_VERSION-linux-x64.tgz" -C "$work" package/vendor/x86_64-unknown-linux-musl/bin
  install -m 0755 "$work/package/vendor/x86_64-unknown-linux-musl/bin/codex" "$clis/codex-$CODEX_VERSION"
  install -m 0755 "$work/package/vendor/x86_64-unknown-linux-musl/bin/codex-code-mode-host" "$clis/codex-code-mode-host"
fi
if [ "$(readlink "$clis/claude")" != "claude-$CLAUDE_CODE_VERSION" ] || [ "$(readlink "$clis/codex")" != "codex-$CODEX_VERSION" ]; then
  ln -sfn "claude-$CLAUDE_CODE_VERSION" "$clis/claude"
  ln -sfn "codex-$CODEX_VERSION" "$clis/codex"
fi
