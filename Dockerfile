# syntax=docker/dockerfile:1
# Bumper's container images, one target each (docs/releases.md, "Container images"):
#
#   serve     the App (`bumper serve`): the static binary on distroless, non-root, no shell
#   emulator  `bumper emulator` for demos and tests: its git smart-HTTP server runs git
#   runner    a GitHub Actions runner for Kubernetes (actions-runner-controller) that can
#             run `bumper run` and `bumper image build`: QEMU, nftables, debootstrap…
#
# docker build --target serve -t bumper-serve --build-arg VERSION=v0.4.2 .
# deploy/dockerfiletest checks this file (it parses, the targets exist, COPY sources exist,
# serve runs as non-root and stops on SIGTERM).

ARG GO_VERSION=1.26
# The Actions runner release the runner target carries; its image is Ubuntu, so only its
# /home/runner is taken (see the runner target).
ARG ACTIONS_RUNNER_VERSION=2.336.0

# The build runs on the builder's own platform and cross-compiles: serve's image is
# built for linux/amd64 and linux/arm64 without emulating either.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
# Static (CGO_ENABLED=0): distroless/static has no libc, and the image builder puts this
# same binary into the VM as its guest agent, which it refuses when dynamically linked.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/bumperdev/bumper/internal/buildinfo.Version=${VERSION}" \
      -o /out/bumper ./cmd/bumper

FROM ghcr.io/actions/actions-runner:${ACTIONS_RUNNER_VERSION} AS actions-runner

# serve needs nothing but CA certificates (TLS to GitHub), which distroless/static holds;
# no shell and no git: serve never runs a program.
FROM gcr.io/distroless/static-debian12:nonroot AS serve
COPY --from=build /out/bumper /usr/local/bin/bumper
# 65532 is distroless's nonroot user, numeric so that runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 8080
# serve drains its webhook queue on SIGTERM (server.shutdown_timeout) before it exits.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/bumper"]
CMD ["serve", "--config", "/etc/bumper/serve.yml"]

# The emulator serves its repositories with `git http-backend`, so it needs git: an image
# of its own keeps git out of serve's.
FROM debian:bookworm-slim AS emulator
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/bumper-emulator --create-home bumper
COPY --from=build /out/bumper /usr/local/bin/bumper
USER 10001:10001
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/bumper", "emulator"]
CMD ["--listen", "0.0.0.0:8080", "--state", "/var/lib/bumper-emulator"]

# The runner is Debian 12, not the runner's own Ubuntu image: `bumper image build` takes
# the VM's kernel (linux-image-amd64) and busybox-static from the host's apt sources and
# debootstraps the rootfs from the host's Debian mirror, which an Ubuntu host has not.
# The Actions runner itself is a self-contained .NET program under /home/runner, copied
# from the release's image; installdependencies.sh adds the libraries it needs on Debian.
FROM debian:bookworm AS runner
ENV DEBIAN_FRONTEND=noninteractive
# The packages a run and an image build need (scripts/install-deps.sh and docs/runner-host.md
# list the same): QEMU and qemu-img for the microVM, e2fsprogs for its disks, nftables and
# iproute2 for the run's network namespace, git for the workspace, debootstrap,
# busybox-static, kmod and xz-utils for the image, curl for the action's download of
# bumper. The apt lists are kept: the image builder asks apt which kernel to fetch.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates curl git jq sudo unzip \
      qemu-system-x86 qemu-utils e2fsprogs nftables iproute2 \
      debootstrap busybox-static kmod xz-utils file procps \
 && useradd --system --no-create-home --shell /usr/sbin/nologin bumper-vm
COPY --from=actions-runner /home/runner /home/runner
RUN /home/runner/bin/installdependencies.sh
COPY --from=build /out/bumper /usr/local/bin/bumper
# As in the runner's own image: the runner handles SIGTERM itself and logs to stdout.
ENV RUNNER_MANUALLY_TRAP_SIG=1 \
    ACTIONS_RUNNER_PRINT_LOG_TO_STDOUT=1 \
    RUNNER_ALLOW_RUNASROOT=1
# Root: each run makes a network namespace, a TAP device and nftables rules, and QEMU
# drops to bumper-vm (the action's qemu-user input) before it starts the guest.
USER root
WORKDIR /home/runner
STOPSIGNAL SIGTERM
CMD ["/home/runner/run.sh"]
