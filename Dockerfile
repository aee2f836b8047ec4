# The App's container: `bumper serve` (and `bumper emulator` for demos).
# The runner side needs QEMU, nftables and root on the host, so it does not run from
# this image: install the binary on the self-hosted runner instead.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/bumper ./cmd/bumper

FROM debian:bookworm-slim
# git: the emulator's smart-HTTP server; ca-certificates: TLS to GitHub.
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 bumper
COPY --from=build /out/bumper /usr/local/bin/bumper
USER bumper
ENTRYPOINT ["/usr/local/bin/bumper"]
CMD ["help"]
