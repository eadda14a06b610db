#!/usr/bin/env bash
# Builds the Docker sandbox image (smoldataenvs-sandbox:<content hash>, also tagged
# smoldataenvs-sandbox:current for compose.yaml). Idempotent and quick when the image exists.
# Ahead of time: the first Docker sandbox builds the image too (sandboxes/docker/image.py), but
# only this script makes a base image where no registry answers.
#
#   scripts/build-sandbox-image.sh                  # public python:3.11-slim-bookworm base, or a local one
#   BASE_IMAGE=my/python:3.11 scripts/build-sandbox-image.sh
#   FORCE=1 scripts/build-sandbox-image.sh          # rebuild even if present
#
# Where no container registry is reachable (and BASE_IMAGE is unset), the base image is built from
# Debian packages: debootstrap a minimal bookworm with python3.11 and `docker import` it as
# smoldataenvs-base:bookworm-py3.11. Used by scripts/test and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[build-sandbox-image] %s\n' "$*" >&2; }

PUBLIC_BASE=python:3.11-slim-bookworm
LOCAL_BASE=smoldataenvs-base:bookworm-py3.11
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

docker info >/dev/null 2>&1 || { log "no Docker engine answers (scripts/provision-docker.sh starts one)"; exit 1; }

if [ -z "${FORCE:-}" ] && "$PY" -m smoldataenvs_tasks.sandboxes image-status >/dev/null 2>&1; then
  log "$("$PY" -m smoldataenvs_tasks.sandboxes image-status)"
  exit 0
fi

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

build_local_base() {
  # A minimal Debian bookworm with Debian's python3.11 (the same interpreter the bwrap env uses).
  command -v debootstrap >/dev/null 2>&1 || {
    [ "$(id -u)" = 0 ] || { log "need debootstrap (apt-get install debootstrap) or BASE_IMAGE"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  }
  [ "$(id -u)" = 0 ] || { log "debootstrap needs root; or set BASE_IMAGE to a python3.11 image"; exit 1; }
  local mirror root
  mirror=$( { grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
              grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}'; } \
            | grep -E '/debian/?$' | head -n1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  root=$(mktemp -d /var/tmp/smoldataenvs-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  log "debootstrap bookworm from $mirror (about a minute)"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$mirror" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
  rm -f "$root.log"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import - "$LOCAL_BASE" >/dev/null
  rm -rf "$root"
  trap - EXIT
  log "imported $LOCAL_BASE"
}

if [ -z "${BASE_IMAGE:-}" ]; then
  if image_exists "$PUBLIC_BASE"; then
    BASE_IMAGE=$PUBLIC_BASE
  elif image_exists "$LOCAL_BASE"; then
    BASE_IMAGE=$LOCAL_BASE
  elif timeout 120 docker pull -q "$PUBLIC_BASE" >/dev/null 2>&1; then
    BASE_IMAGE=$PUBLIC_BASE
  else
    log "cannot pull $PUBLIC_BASE: building a base from Debian packages"
    build_local_base
    BASE_IMAGE=$LOCAL_BASE
  fi
fi
log "base image: $BASE_IMAGE"
args=(build-image --base-image "$BASE_IMAGE")
[ -z "${FORCE:-}" ] || args+=(--force)
"$PY" -m smoldataenvs_tasks.sandboxes "${args[@]}"
