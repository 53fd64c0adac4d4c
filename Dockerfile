# syntax=docker/dockerfile:1
# blast's image: one static binary on distroless, as user 65532.
#
#   docker build -t ghcr.io/blastnet/blast:latest .
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/blastnet/blast:latest --push .
#
# `make image` builds the same image without a daemon or a registry (a
# scratch base with /etc/passwd, a home and /tmp in place of distroless; see
# README.md, "The container image").
#
# The default command is `blast agent` (deploy/kubernetes runs it on every
# node); `docker run --rm IMAGE version` prints the version and commit.

FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# The context includes .git (see .dockerignore): go build stamps the commit,
# its time and whether the tree was modified into the binary, where
# `blast version` reads them (runtime/debug.ReadBuildInfo). Without .git the
# build still succeeds and says "commit unknown".
COPY . .
ARG TARGETOS TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOTOOLCHAIN=local \
    go build -buildvcs=auto -trimpath -ldflags '-s -w' -o /blast ./cmd/blast

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /blast /blast
USER 65532:65532
# 5201: the data port (TCP and UDP); 5202: the agent's control port.
EXPOSE 5201/tcp 5201/udp 5202/tcp
ENTRYPOINT ["/blast"]
CMD ["agent"]
