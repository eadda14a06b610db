#!/bin/sh
# Entrypoint of the sandbox image (and DockerSession's start step; running it twice is harmless).
# Links every staged table, mounted read-only at /mnt/tables, into the writable input directory
# /home/user/input, seeds Matplotlib's prebuilt font cache, marks the sandbox ready, then runs its
# arguments.
#   SMOLDATA_TABLES_DIR   where the tables are (default /mnt/tables)
#   SMOLDATA_WAIT_STAGED  seconds to wait for a remote stager's marker file first (cluster mode)
set -eu
tables=${SMOLDATA_TABLES_DIR:-/mnt/tables}
input=/home/user/input
marker=.smoldata-staged
missing=.smoldata-missing
if [ -n "${SMOLDATA_WAIT_STAGED:-}" ]; then
  tries=$((SMOLDATA_WAIT_STAGED * 10))
  while [ ! -e "$tables/$marker" ]; do
    tries=$((tries - 1))
    if [ "$tries" -le 0 ]; then
      echo "sandbox-init: no $tables/$marker after ${SMOLDATA_WAIT_STAGED}s" >&2
      exit 1
    fi
    sleep 0.1
  done
fi
mkdir -p "$input" "$HOME/.cache"
[ -e "$HOME/.cache/matplotlib" ] || cp -R /opt/smoldata/mplconfig "$HOME/.cache/matplotlib" 2>/dev/null || true
for f in "$tables"/* "$tables"/.[!.]* "$tables"/..?*; do
  # An unmatched glob stays literal; skip it, and the stager's marker files.
  [ -e "$f" ] || [ -L "$f" ] || continue
  [ "${f##*/}" != "$marker" ] || continue
  [ "${f##*/}" != "$missing" ] || continue
  ln -sfn "$f" "$input/${f##*/}"
done
: > "$HOME/.smoldata-ready"
[ $# -eq 0 ] || exec "$@"
