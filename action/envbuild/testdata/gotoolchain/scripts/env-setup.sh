#!/bin/sh
# Installs the Go release go.mod asks for (its toolchain line, else its go line), which is
# newer than Debian's golang-go, and fills the module and build caches for the runs.
set -eu
t() { echo "== $(date +%s.%N) $*"; }
t start
v=$(sed -n 's/^toolchain go\([^ ]*\).*/\1/p' go.mod)
[ -n "$v" ] || v=$(sed -n 's/^go \([^ ]*\).*/\1/p' go.mod)
case $v in *.*.*|*rc*) ;; *) v=$v.0 ;; esac
mod=golang.org/toolchain@v0.0.1-go$v.linux-$(go env GOARCH)
dir=$(cd / && go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { (cd / && go mod download -json "$mod"); exit 1; }
t downloaded $dir
chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
mkdir -p ~/bin
ln -sf "$dir/bin/go" "$dir/bin/gofmt" ~/bin/
hash -r
go version
t modules
go mod download
t warm
go test -run '^$' ./...
t done
du -sh ~/go ~/.cache/go-build
df -h /
