# syntax=docker/dockerfile:1
# Build: compile TypeScript with the full dev toolchain.
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# The `node` devDependency only pins Node for machines whose system Node is older; the base
# image already is Node 24, so its install script is skipped here.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime: production dependencies and the compiled agent only, as a non-root user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
USER 1000:1000
EXPOSE 9090
ENTRYPOINT ["node", "--enable-source-maps", "dist/cli/main.js"]
CMD ["run"]
