# Chime's production image: `chime serve` (API and dispatcher) on the embedded database in the /data volume, or on
# PostgreSQL with DATABASE_URL. Build: `docker build -t chime .`; run: `docker run -d -p 8080:8080 -v chime-data:/data chime`.
# Stages: `deps` installs the production dependencies, `build` makes dist/ (the esbuild bundle and the console's
# assets) with every dependency, and the final stage has only those two results, run by the non-root `node` user.

# What `npm ci` reads: the lockfile, the workspaces' package.json (the lockfile names them) and src/store/patches, which
# must be there before it runs: its postinstall (patch-package) patches postgres.js and PGlite, and `chime` refuses to
# start on unpatched ones.
FROM node:24-bookworm-slim AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
COPY packages/receiver/package.json packages/receiver/
COPY src/store/patches src/store/patches

# sodium-native ships prebuilt libsodium for every platform (no compiler needed): only this platform's is kept.
FROM manifests AS deps
RUN npm ci --omit=dev --no-audit --no-fund \
 && find node_modules/sodium-native/prebuilds -mindepth 1 -maxdepth 1 ! -name "$(node -p 'process.platform + "-" + process.arch')" -exec rm -rf {} + \
 && npm cache clean --force

FROM manifests AS build
RUN npm ci --no-audit --no-fund
# What `npm run build` reads, and nothing else: a change to the docs or the tests reuses the cached build.
COPY tsconfig.json ./
COPY packages packages
COPY src src
RUN npm run build

FROM node:24-bookworm-slim
# tini as PID 1: it forwards SIGTERM to chime (which drains) and reaps zombies; node as PID 1 would ignore a SIGTERM
# that arrives before chime has installed its handlers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && mkdir /data && chown node:node /data
WORKDIR /app
# The commit built (`--build-arg CHIME_COMMIT=$(git rev-parse HEAD)`), for chime_build_info in /metrics: the image has no .git.
ARG CHIME_COMMIT=unknown
ENV HOST=0.0.0.0 PORT=8080 CHIME_DATA_DIR=/data CHIME_COMMIT=$CHIME_COMMIT
COPY package.json ./
COPY drizzle drizzle
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist dist
USER node
# The embedded database, its encryption key and first-tenant.json; unused with DATABASE_URL.
VOLUME /data
EXPOSE 8080
# No curl in the slim image: node itself asks /readyz (database reachable), on the port the service listens on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/node/cli.mjs"]
CMD ["serve"]
