#!/bin/sh
# Bumper's environment setup (.github/bumper.yml): npm itself, then npm's cache (~/.npm,
# kept in the environment's image) filled with what package-lock.json pins. Debian's
# nodejs ships without npm, and Debian's npm package cannot be bootstrapped into an image,
# so npm's release comes from the registry too, checked against the sha512 integrity the
# registry states. curl and npm go through the VM's proxy (HTTPS_PROXY); node's own fetch
# would not. A run then installs offline: `npm ci --offline`.
set -eu
NPM_VERSION=10.9.2
meta=$(curl -fsS "https://registry.npmjs.org/npm/$NPM_VERSION")
field() { node -e 'const m = JSON.parse(process.argv[1]); console.log(m.dist[process.argv[2]])' "$meta" "$1"; }
curl -fsS -o "$HOME/npm.tgz" "$(field tarball)"
node -e '
const [file, want] = process.argv.slice(1);
const got = "sha512-" + require("crypto").createHash("sha512").update(require("fs").readFileSync(file)).digest("base64");
if (got !== want) { console.error(`npm tarball: integrity ${got}, the registry says ${want}`); process.exit(1); }
' "$HOME/npm.tgz" "$(field integrity)"
mkdir -p "$HOME/.local/lib/npm" "$HOME/.local/bin"
tar -xzf "$HOME/npm.tgz" -C "$HOME/.local/lib/npm" --strip-components=1
rm "$HOME/npm.tgz"
ln -sf "$HOME/.local/lib/npm/bin/npm-cli.js" "$HOME/.local/bin/npm" # ~/.local/bin is first on PATH
npm --version
npm ci --no-audit --no-fund
