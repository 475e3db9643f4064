# The example application of examples/compose.yaml: Node.js (Debian's) and the official MCP
# TypeScript SDK, and no Docker socket. Its build context holds app.mjs and node_modules with
# @modelcontextprotocol/sdk (npm install @modelcontextprotocol/sdk):
#   docker build --network host -t backyard-mcp/app:local -f examples/compose/app.Dockerfile CTX
ARG BASE=backyard-mcp/python:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY node_modules /app/node_modules
COPY app.mjs /app/app.mjs
USER 1000
CMD ["node", "/app/app.mjs"]
