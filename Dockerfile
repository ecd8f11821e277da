# syntax=docker/dockerfile:1
# The image runs the npm package, built by the same steps test/integration/packaging/package.test.ts
# proves: `npm pack` (prepack compiles to dist) and a production-only install of the tarball.

# 1. Build: the full dev toolchain, then the package tarball (compiled JavaScript + the seed).
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# The `node` devDependency only pins Node on machines whose system Node is older; the base
# image is Node 24, so install scripts are skipped (npm pack still runs prepack below).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm pack --pack-destination /tmp && mv /tmp/k8s-listener-*.tgz /tmp/k8s-listener.tgz

# 2. Install: the tarball's files with production dependencies only, at the lockfile's versions.
FROM node:24-bookworm-slim AS install
WORKDIR /app
COPY --from=build /tmp/k8s-listener.tgz /tmp/k8s-listener.tgz
COPY package-lock.json ./
RUN tar -xzf /tmp/k8s-listener.tgz --strip-components=1 \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -f package-lock.json

# 3. Runtime: Node 24 and the installed package; nothing else of the build, no npm.
FROM node:24-bookworm-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="k8s-listener" \
      org.opencontainers.image.description="Kubernetes listener agent of the deployment management service" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# npm is not needed to run the agent; removing it removes its dependencies' attack surface.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
# MALLOC_ARENA_MAX: glibc gives each thread that allocates (V8's GC and compiler threads, libuv's
# pool) an arena of its own; two are enough for one event loop, and cut the peak RSS of a
# 1,000-deployment cold sync by 17 MiB (bench:sync, which runs the agent with this environment).
# The fixed thresholds keep glibc from raising them after the first large response is freed:
# blocks of 128 KiB and more (list and watch bodies) stay mapped apart and go back to the system
# when freed, and the heap's free top is returned (-5 MiB peak RSS, no CPU cost measured).
# A 16 MiB young generation: under the chart's 384 MiB limit V8 sizes it at about 1 MiB, and a
# cold sync then spent a quarter to a third of its CPU collecting garbage (a tenth with 16 MiB,
# for some 20 MiB more peak RSS; bench:sync at N = 200). The old generation's ceiling is 60 % of
# the container's memory limit: sized by V8 alone it takes two thirds (256 MiB of 384), which
# with the young generation, the binary's own pages and malloc adds up to more than the limit, so
# a large listener would be killed by the kernel before V8 collected hard (a container without a
# limit: 60 % of the node's memory). Keep both when setting NODE_OPTIONS.
ENV NODE_ENV=production MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072 \
    NODE_OPTIONS="--max-semi-space-size=16 --max-old-space-size-percentage=60"
WORKDIR /app
COPY --from=install --chown=0:0 /app ./
# Numeric, so runAsNonRoot can verify it; the files stay root-owned and read-only to the agent,
# which writes nothing to disk (logs go to stdout): readOnlyRootFilesystem works as is.
USER 1000:1000
EXPOSE 9090
# Exec form: node is PID 1 and receives SIGTERM itself; `run` drains, releases its Lease and
# exits 0. The agent starts no child processes, so there are none to reap. No
# --enable-source-maps: Node would parse every source map of the bundle at start (+14 MiB RSS);
# the maps ship beside the bundle for NODE_OPTIONS=--enable-source-maps when a trace needs them.
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
CMD ["run"]
