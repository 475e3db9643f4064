# The backyard-mcp server as a service (examples/compose.yaml). Its build context is a
# directory holding the binary as ./backyard-mcp:
#   mkdir -p /tmp/ctx && cp build/backyard-mcp /tmp/ctx/ &&
#   docker build --network host -t backyard-mcp/server:local \
#     -f examples/compose/server.Dockerfile /tmp/ctx
# The base is the local Debian image (backends/docker/images/build-local.sh); what the binary
# loads comes from Debian: mimalloc and simdjson, cpp-httplib (the HTTP transport), and libcurl, libarchive and libcrypto, which
# the Docker backend and the tenants' tokens load when first needed.
ARG BASE=backyard-mcp/python:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmimalloc2.0 libsimdjson14 libcpp-httplib0.11 libcurl4 libarchive13 libssl3 \
      ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
COPY backyard-mcp /usr/local/bin/backyard-mcp
EXPOSE 8765
ENTRYPOINT ["/usr/local/bin/backyard-mcp"]
