# Bumper's build and test targets. CONTRIBUTING.md says which tests need root, QEMU or
# KVM; the gates live in internal/testgate.
GO ?= go
PKGS ?= ./...
GOLANGCI_LINT_VERSION ?= v2.15.0
# The last GoReleaser that builds with Go 1.26 (v2.18 wants Go 1.27).
GORELEASER_VERSION ?= v2.17.0
TOOLS := $(CURDIR)/bin/tools
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# deploy/ is a Go module of its own (Helm and BuildKit, for the checks of the container
# images and the Kubernetes manifests), so the main module does not carry their weight.
DEPLOY := deploy

.PHONY: deps build demo unit test lint tidy-check bench soak notes-check release-check release-tools deploy-test

# The Debian packages (and agent CLIs) the demo and the tests need, on a fresh Debian 12
# machine (as root); a machine that has them all passes in well under a second.
deps:
	scripts/install-deps.sh

# The whole arc on this machine (docs/demo.md): an issue to a reviewed pull request, with
# the GitHub emulator, serve, the firewall and a microVM. As root. DEMO_FLAGS passes
# flags (`make demo DEMO_FLAGS=--keep`).
demo: deps build
	bin/bumper demo $(DEMO_FLAGS)

# Static (CGO_ENABLED=0): the same binary runs as the guest agent inside microVMs, whose
# image builder refuses a dynamically linked one. `bumper version` prints VERSION.
build:
	CGO_ENABLED=0 $(GO) build -trimpath \
		-ldflags "-X github.com/bumperdev/bumper/internal/buildinfo.Version=$(VERSION)" \
		-o bin/bumper ./cmd/bumper

# The fast tier: no root, no QEMU, no network namespaces (testgate skips those under
# -short, and the slowest integration tests, which make test runs). About a minute on
# 2 cores.
unit:
	$(GO) test -short -count=1 $(PKGS)

# Everything, as CI runs it. -race because the emulator, the firewall and the App are
# concurrent servers; -count=1 so a cached pass never hides a change in the machine
# (QEMU, nftables, git) that the integration tests depend on. No `go vet` of its own:
# lint's govet runs the same analyzers as Go's vet (golangci-lint's defaults follow it),
# and a second type-check of every package cost CI 80 s.
test: deps tidy-check lint notes-check deploy-test
	$(GO) test -race -count=1 -timeout 40m $(PKGS)

# The Dockerfile's targets, the runner scale set's values rendered through
# actions-runner-controller's chart, serve's Kubernetes manifests. No cluster, no
# container engine.
deploy-test: $(TOOLS)/golangci-lint
	cd $(DEPLOY) && $(TOOLS)/golangci-lint run ./...
	cd $(DEPLOY) && $(GO) test -count=1 ./...

# CHANGELOG.md's headings, which the release's notes come from. (.goreleaser.yaml is held
# to GoReleaser's JSON Schema by internal/release's TestGoreleaserConfig, in seconds.)
notes-check:
	$(GO) run ./scripts/releasenotes -check

# GoReleaser's own check of .goreleaser.yaml, which also refuses deprecated keys: what
# release.yml runs before it releases. Building GoReleaser takes minutes, so make test
# does not.
release-check: notes-check release-tools
	$(TOOLS)/goreleaser check

release-tools: $(TOOLS)/goreleaser

$(TOOLS)/goreleaser:
	GOBIN=$(TOOLS) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

lint: $(TOOLS)/golangci-lint
	$(TOOLS)/golangci-lint run $(PKGS)

$(TOOLS)/golangci-lint:
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# go.mod and go.sum say exactly what the code imports.
tidy-check:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	@cd $(DEPLOY) && { $(GO) mod tidy -diff >/dev/null || { echo "$(DEPLOY)/go.mod/go.sum are not tidy: run go mod tidy in $(DEPLOY)"; $(GO) mod tidy -diff; exit 1; }; }

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Bumper's week (docs/week.md): forty items, GitHub's faults,
# serve replicas and runners killed; prints its figures and fails if a promise broke. As
# root. `make test` runs the short week (ten items) as e2e TestWeek.
soak: deps
	bench/soak.sh
