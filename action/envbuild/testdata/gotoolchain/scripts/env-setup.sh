#!/bin/sh
# Bumper's environment setup (.github/bumper.yml): installs the Go release go.mod asks for,
# newer than Debian bookworm's golang-go (1.19, which predates GOTOOLCHAIN), and fills the
# module and build caches the runs reuse. It runs once, as the VM's user, in the checkout.
set -eu

# The release: go.mod's toolchain line, else its go line, where "go 1.25" (1.21 or later,
# no patch) means go1.25.0, as GOTOOLCHAIN=auto reads it.
v=$(sed -n 's/^toolchain go\([0-9][0-9a-z.]*\).*/\1/p' go.mod)
[ -n "$v" ] || v=$(sed -n 's/^go \([0-9][0-9a-z.]*\).*/\1/p' go.mod)
case $v in *.*.* | *rc* | *beta*) ;; *) v=$v.0 ;; esac

# Debian's go fetches the release the way GOTOOLCHAIN does: the module golang.org/toolchain
# from the Go module proxy, checked against the checksum database (which the proxy serves
# too). From / because go 1.19 cannot read this go.mod (its toolchain line, its go line).
mod=golang.org/toolchain@v0.0.1-go$v.linux-$(go env GOARCH)
out=$(cd / && go mod download -json "$mod") || { echo "$out" >&2; exit 1; }
dir=$(echo "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[ -x "$dir/bin" ] || { echo "no release directory in: $out" >&2; exit 1; }

# Module zips keep no execute bits (go sets them itself when it switches toolchains).
chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
mkdir -p "$HOME/bin"
ln -sf "$dir/bin/go" "$dir/bin/gofmt" "$HOME/bin/" # ~/bin comes first on the user's PATH

# From here the new go, as the runs run it (its GOTOOLCHAIN is auto). It must be the release
# go.mod asks for: one that switched to another would need the proxy in every run, which
# their firewall need not allow. GOPROXY=off makes such a switch fail here instead.
go=$HOME/bin/go
GOPROXY=off "$go" version
"$go" mod download
# The tests' packages and what they import, compiled once: runs start with a warm cache.
"$go" test -run '^$' ./...
