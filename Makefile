# Bumper's build and test targets. CONTRIBUTING.md says which tests need root, QEMU or
# KVM; the gates live in internal/testgate.
GO ?= go
PKGS ?= ./...
GOLANGCI_LINT_VERSION ?= v2.15.0
TOOLS := $(CURDIR)/bin/tools
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: build unit test lint tidy-check bench

# Static (CGO_ENABLED=0): the same binary runs as the guest agent inside microVMs, whose
# image builder refuses a dynamically linked one. `bumper version` prints VERSION.
build:
	CGO_ENABLED=0 $(GO) build -trimpath \
		-ldflags "-X github.com/bumperdev/bumper/internal/buildinfo.Version=$(VERSION)" \
		-o bin/bumper ./cmd/bumper

# The fast tier: no root, no QEMU, no network namespaces (testgate skips those under
# -short). Seconds to a minute.
unit:
	$(GO) test -short -count=1 $(PKGS)

# Everything, as CI runs it. -race because the emulator, the firewall and the App are
# concurrent servers; -count=1 so a cached pass never hides a change in the machine
# (QEMU, nftables, git) that the integration tests depend on.
test: tidy-check lint
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 40m $(PKGS)

lint: $(TOOLS)/golangci-lint
	$(TOOLS)/golangci-lint run $(PKGS)

$(TOOLS)/golangci-lint:
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# go.mod and go.sum say exactly what the code imports.
tidy-check:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
