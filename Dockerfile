# fleet-worker, the one runtime every generated worker runs. Multi-platform:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=0.2.0 -t "$ECR/fleet-worker:0.2.0" --push .
#
# Without a Docker daemon, `go run ./tools/image -o DIR -version 0.2.0` writes the same image
# (same entrypoint, user and CA bundle; a test holds them together) as an OCI layout.
# AgentCore runs arm64 images only; Lambda and EKS take either.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH VERSION=0.1.0-dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO off: a static binary, so the minimal base below (no libc) runs it.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/fleetc/fleetc/internal/buildinfo.Version=${VERSION}" \
      -o /out/fleet-worker ./cmd/fleet-worker

# distroless static: CA certificates, tzdata and a non-root user, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=0.1.0-dev
LABEL org.opencontainers.image.title=fleet-worker org.opencontainers.image.version=$VERSION
COPY --from=build /out/fleet-worker /usr/local/bin/fleet-worker
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/fleet-worker"]
