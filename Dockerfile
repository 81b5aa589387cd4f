# syntax=docker/dockerfile:1
# One image for every service: `platform` is the entry point and the
# command names the service (identity serve, box migrate, events publish …).
# The binary is static (CGO_ENABLED=0: SQLite is modernc.org/sqlite, pure
# Go), so the runtime image is distroless static, non-root, with no shell.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/platform ./cmd/platform

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/platform /platform
# nonroot is uid 65532; the manifests run it with a read-only root file
# system, so anything written (SQLite, courier's local mailbox) goes to a
# mounted volume.
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/platform"]
CMD ["help"]
