# The one test command CI and the README use. -race because the emulator, the firewall
# and the App are concurrent servers; -count=1 so a cached pass never hides a change in
# the machine (QEMU, nftables, git) that the integration tests depend on.
GO ?= go
PKGS ?= ./...

.PHONY: test build bench

# Static (CGO_ENABLED=0): the same binary runs as the guest agent inside microVMs, whose
# image builder refuses a dynamically linked one.
build:
	CGO_ENABLED=0 $(GO) build -o bin/bumper ./cmd/bumper

test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 25m $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
