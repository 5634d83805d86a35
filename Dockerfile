# syntax=docker/dockerfile:1
# Starmap agents image: the probe and the collector in one multi-call single-file executable
# (Node SEA) on an empty base: /usr/local/bin/agent, with `probe` and `collector` as links to it
# (it runs the program it is started as), so the image carries one Node runtime. Either agent:
#   docker run --rm -p 127.0.0.1:9000:9000 starmap:0.1.0 probe --urls=http://frontend/status
#   docker run --rm -p 127.0.0.1:9001:9001 starmap:0.1.0 collector --resources-file=/config/resources.json
# Multi-arch: docker buildx build --platform linux/amd64,linux/arm64 -t starmap:0.1.0 .
# Smaller pulls (zstd layers: ~32 MB instead of ~44 MB gzip; Docker 23+, containerd 1.5+, CRI-O):
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --output type=registry,name=REGISTRY/starmap:0.1.0,oci-mediatypes=true,compression=zstd,compression-level=19,force-compression=true .
# (The build stage runs on the build machine and cross-builds the arm64 executables; the libs stage
# runs on the target platform, which needs QEMU binfmt for a foreign architecture.)

ARG NODE_IMAGE=node:24-bookworm

# Build stage: bundle the agents and turn them into one single-file executable for TARGETARCH.
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS build
ARG TARGETARCH=amd64
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN set -eu; \
    case "$TARGETARCH" in amd64) arch=x64 ;; arm64) arch=arm64 ;; *) echo "unsupported TARGETARCH $TARGETARCH" >&2; exit 1 ;; esac; \
    if [ "$arch" = arm64 ]; then apt-get update && apt-get install -y --no-install-recommends binutils-aarch64-linux-gnu gcc-aarch64-linux-gnu libc6-dev-arm64-cross; fi; \
    node_modules/.bin/node scripts/build.ts agent --arch=$arch; \
    mkdir -p /out/usr/local/bin; \
    if [ "$arch" = x64 ]; then cp dist/bin/agent /out/usr/local/bin/agent; else cp dist/bin/agent-linux-arm64 /out/usr/local/bin/agent; fi; \
    ln -s agent /out/usr/local/bin/probe; \
    ln -s agent /out/usr/local/bin/collector; \
    if [ "$arch" = x64 ]; then cc -O2 -s -o /out/usr/local/bin/healthcheck scripts/lib/healthcheck.c; \
    else aarch64-linux-gnu-gcc -O2 -s -o /out/usr/local/bin/healthcheck scripts/lib/healthcheck.c; fi

# Libs stage (target platform): collect exactly the shared libraries the executables load, at
# their paths, plus a passwd entry for the non-root user. COPY keeps the links as links.
FROM ${NODE_IMAGE} AS libs
COPY --from=build /out /rootfs
RUN set -eu; \
    for f in /rootfs/usr/local/bin/agent /rootfs/usr/local/bin/healthcheck; do \
      ldd "$f" | grep -o '/[^ ]*' | while read -r lib; do cp --parents -L "$lib" /rootfs/; done; \
    done; \
    mkdir -p /rootfs/etc /rootfs/tmp; chmod 1777 /rootfs/tmp; \
    echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > /rootfs/etc/passwd; \
    echo 'nonroot:x:65532:' > /rootfs/etc/group

# Final image: only the agent (and its two links), the healthcheck, their libraries and /etc/passwd.
# No shell, no package manager.
FROM scratch
ARG VERSION=0.1.0
COPY --from=libs /rootfs /
ENV PATH=/usr/local/bin
USER 65532:65532
EXPOSE 9000 9001
LABEL org.opencontainers.image.title="starmap" \
      org.opencontainers.image.description="Starmap network-policy test agents: star-compatible probe and collector" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/starmap/starmap" \
      org.opencontainers.image.licenses="Apache-2.0"
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/usr/local/bin/healthcheck"]
CMD ["probe", "--help"]
