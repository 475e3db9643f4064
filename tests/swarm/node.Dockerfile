# A second Docker engine for the Swarm test: dockerd in a container on this machine, joined to
# the local engine's swarm as a worker. Its /var/lib/docker is a volume (overlay2 does not
# stack on the container's own overlay root). Built on the local Debian image
# (backends/docker/images/build-local.sh), its packages from Debian's archive.
ARG BASE=backyard-mcp/python:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      docker.io iptables ca-certificates \
 && rm -rf /var/lib/apt/lists/*
VOLUME /var/lib/docker
ENTRYPOINT ["dockerd", "--host", "unix:///var/run/docker.sock"]
