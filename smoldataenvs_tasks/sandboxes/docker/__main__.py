"""`python -m smoldataenvs_tasks.sandboxes.docker <command>`: the `smoldataenvs sandbox` commands
(build-image, image-status, cleanup, info, setup) for scripts that run before the console script
is on PATH (scripts/build-sandbox-image.sh)."""

from smoldataenvs_tasks.sandboxes.cli import sandbox

sandbox(prog_name="python -m smoldataenvs_tasks.sandboxes.docker")
