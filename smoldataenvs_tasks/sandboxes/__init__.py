"""Where model-written code runs: bwrap, Docker, local, remote staging; one runner for all.

`RESOURCES` holds the files the sandboxes are built from and run with: `requirements.lock` (the
one library set, for the bwrap environment and the Docker image alike), the `Dockerfile`,
`sandbox-init.sh`, and the compose/values files Inspect's docker and k8s providers read.
"""

from pathlib import Path

RESOURCES = Path(__file__).resolve().parent / "resources"
LOCK_FILE = RESOURCES / "requirements.lock"
