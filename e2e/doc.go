// Package e2e holds Bumper's end-to-end tests: the GitHub emulator with its git server
// and local runner, serve, and the real `bumper run` with its firewall and a QEMU
// microVM, driven only as a maintainer would drive them, through GitHub.
package e2e
