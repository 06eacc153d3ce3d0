# syntax=docker/dockerfile:1
# One image, two commands. The compiled JavaScript runs on the official slim Node 24 image (its root filesystem without
# npm, corepack and Node's C headers), as a non-root user, and writes nothing to its filesystem, so it runs with a
# read-only root filesystem. test/e2e/image.test.ts builds it with buildah (hack/image/build.sh) and runs it on kcp.
#
# Commands (the Helm chart in deploy/chart/ runs exactly these; both take --help):
#   node /app/dist/cmd/controller.js   the controller (the default command)
#   node /app/dist/cmd/webhook.js      the admission webhook
#
#   docker build -t kcp-dependency-controller:0.1.0 .
#   docker run --rm kcp-dependency-controller:0.1.0 --help
#   docker run --rm --entrypoint node kcp-dependency-controller:0.1.0 /app/dist/cmd/webhook.js --help
#
# NODE_VERSION follows the `node` devDependency in package.json (the Node the tests run on). The base is named by tag
# only: its digest could not be read from where this was written (no Docker Hub access), and none is made up. Pin it
# where the registry is reachable: FROM node:${NODE_VERSION}-slim@sha256:<digest of node:24.21.0-slim>.
ARG NODE_VERSION=24.21.0

# Compile src/ to dist/ (tsconfig.build.json). --ignore-scripts: the only install script is the `node` devDependency's
# download of a second Node binary, which the image does not need; tsc runs on the image's own node.
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

# Runtime dependencies only.
FROM node:${NODE_VERSION}-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts --omit=dev && npm cache clean --force

# The runtime's root filesystem: the base without what only a build needs (npm, corepack, yarn, Node's C headers and
# docs). Copied whole into the final stage below, so that the removed files do not stay behind in a lower layer.
FROM node:${NODE_VERSION}-slim AS runtime
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-v* /usr/local/include/node /usr/local/share/doc/node \
      /usr/local/share/man/man1/node.1 /usr/local/share/systemtap \
  && node --version

FROM scratch
COPY --from=runtime / /
ARG NODE_VERSION
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_VERSION=${NODE_VERSION} NODE_ENV=production
WORKDIR /app
# package.json carries "type": "module", which makes Node load dist/**/*.js as ES modules.
COPY --from=deps /app/package.json ./package.json
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# The base image's unprivileged `node` user, by number so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 9443 8081
# --max-semi-space-size: V8's young generation stays small, so a burst of large watch events leaves no resident pages
# behind (docs/operations.md, "Sizing the webhook"); the chart's commands carry the same flags.
ENTRYPOINT ["node", "--enable-source-maps", "--max-semi-space-size=4", "/app/dist/cmd/controller.js"]
