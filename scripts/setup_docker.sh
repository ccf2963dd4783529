#!/usr/bin/env bash
# Makes a Docker engine available for the container launcher (idempotent):
#   installs Debian's docker.io and debootstrap when missing (as root), starts dockerd when no
#   daemon answers, and waits until `docker info` does. Not root and no daemon → says what to do.
# Images are not pulled (no registry is reachable): `python -m harness build-images` builds them.
set -euo pipefail
if docker info >/dev/null 2>&1; then
  command -v debootstrap >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }
  echo "setup_docker: daemon answers ($(docker info --format '{{.ServerVersion}}'))"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup_docker: no Docker daemon answers and this is not root." >&2
  echo "              As root: apt-get install -y docker.io debootstrap && dockerd &" >&2
  exit 1
fi
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_docker: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# a machine restarted without stopping dockerd keeps its pid file, and dockerd refuses to start
# while it is there ("pid file found, ensure docker is not running"): drop it when that pid is
# not a running dockerd/containerd
for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile" 2>/dev/null || true)
  comm=$( { [ -n "$pid" ] && cat "/proc/$pid/comm"; } 2>/dev/null || true)
  case "$comm" in
    dockerd|containerd) ;;
    *) echo "setup_docker: removing stale $pidfile (pid ${pid:-none} is not a running daemon)"; rm -f "$pidfile" ;;
  esac
done
log=/var/log/kzk-dockerd.log
echo "setup_docker: starting dockerd (log: $log)"
nohup dockerd >"$log" 2>&1 &
for _ in $(seq 1 100); do
  docker info >/dev/null 2>&1 && { echo "setup_docker: daemon up ($(docker info --format '{{.ServerVersion}}'))"; exit 0; }
  sleep 0.3
done
echo "setup_docker: dockerd did not answer within 30 s; last lines of $log:" >&2
tail -n 20 "$log" >&2
exit 1
