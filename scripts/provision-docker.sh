#!/usr/bin/env bash
# Installs and starts a Docker engine (>= 24.0.6, Compose v2) on Debian bookworm. Idempotent:
# does nothing already done. The sandbox image is built by scripts/build-sandbox-image.sh.
#
# Why trixie packages: bookworm's docker.io is 20.10, older than Inspect's minimum (24.0.6). Trixie's
# docker.io (26.x) runs on bookworm with bookworm's containerd/runc. Only the two .debs are taken
# from trixie, through a temporary sources list that is removed again.
set -euo pipefail

log() { printf '[provision-docker] %s\n' "$*" >&2; }

engine_ok() { docker info >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; }

if ! engine_ok; then
  if ! command -v dockerd >/dev/null 2>&1 || ! docker compose version >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { log "need root to install a Docker engine"; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    # The first configured Debian mirror (one-line or deb822 sources), not a commented snapshot URL.
    mirror=$( { grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
                grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}'; } \
              | grep -E '/debian/?$' | head -n1 || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    work=$(mktemp -d)
    trap 'rm -rf "$work" /etc/apt/sources.list.d/zz-trixie-docker.list; apt-get update -qq >/dev/null 2>&1 || true' EXIT
    log "installing bookworm runtime dependencies"
    apt-get update -qq
    apt-get install -y -qq containerd runc tini iptables debootstrap ca-certificates >/dev/null
    log "downloading docker.io and docker-compose from trixie ($mirror)"
    echo "deb $mirror trixie main" > /etc/apt/sources.list.d/zz-trixie-docker.list
    apt-get update -qq
    (cd "$work" && apt-get download -qq docker.io/trixie docker-compose/trixie)
    rm -f /etc/apt/sources.list.d/zz-trixie-docker.list
    apt-get update -qq
    log "installing docker.io"
    dpkg -i --force-depends "$work"/docker.io_*.deb >/dev/null || true
    dpkg-deb -x "$work"/docker-compose_*.deb "$work/compose"
    mkdir -p /usr/local/lib/docker/cli-plugins
    install -m 0755 "$work/compose/usr/libexec/docker/cli-plugins/docker-compose" \
      /usr/local/lib/docker/cli-plugins/docker-compose
  fi
  if ! docker info >/dev/null 2>&1; then
    log "starting dockerd"
    # cgroupfs driver: no systemd here; the log goes beside other runtime state.
    nohup dockerd --exec-opt native.cgroupdriver=cgroupfs >/var/log/dockerd.log 2>&1 &
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  fi
  engine_ok || { log "Docker engine did not come up; see /var/log/dockerd.log"; exit 1; }
fi
log "engine: $(docker version --format '{{.Server.Version}}'), compose: $(docker compose version --short)"
