#!/bin/sh
# The backend's contract cases of the unit tests (execute and run_python under runc) against
# Podman's Docker-compatible service. usage: podman_contract.sh BYD_TESTS
# Skipped (77) unless BYD_PODMAN_TESTS=1, which the test command sets once the service runs.
[ "$BYD_PODMAN_TESTS" = 1 ] || { echo "skipped: BYD_PODMAN_TESTS=1 is not set"; exit 77; }
DOCKER_HOST="unix://${BYD_PODMAN_SOCKET:-/run/podman/podman.sock}" BYD_DOCKER_TESTS=1 \
  exec "$1" --gtest_filter='*DockerRunc*'
