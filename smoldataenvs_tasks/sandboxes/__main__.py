"""`python -m smoldataenvs_tasks.sandboxes <command>`: the `smoldataenvs sandbox` commands
(build-image, image-status, cleanup, info, setup) for scripts that run before the console script
is on PATH (scripts/build-sandbox-image.sh). Here rather than in `sandboxes/docker/`: the
commands cover every kind, and an entry point inside `docker/` importing `sandboxes.cli` (which
imports `docker/`) made the two packages a circle (issue 47)."""

from smoldataenvs_tasks.sandboxes.cli import sandbox

sandbox(prog_name="python -m smoldataenvs_tasks.sandboxes")
