"""The Docker sandbox: the image (`image`), the engine calls (`engine`), `DockerSession` for
callers without Inspect (`session`), and the sweep of containers left by dead processes
(`cleanup`). Remote staging (a stager fetching the tables where the engine cannot see them) is
Inspect's docker provider with `compose.remote.yaml`, or k8s with `values.yaml`: docs/cluster.md.

    smoldataenvs sandbox build-image       # or scripts/build-sandbox-image.sh
    smoldataenvs sandbox image-status
    smoldataenvs sandbox cleanup
    python -m smoldataenvs_tasks.sandboxes image-status    # the same commands
"""

from smoldataenvs_tasks.sandboxes.docker.cleanup import cleanup_stale
from smoldataenvs_tasks.sandboxes.docker.container import NOFILE, container_args
from smoldataenvs_tasks.sandboxes.docker.engine import (
    LABEL_CONTENT,
    LABEL_OWNER,
    LABEL_SESSION,
    docker_binary,
)
from smoldataenvs_tasks.sandboxes.docker.image import (
    COMPOSE_FILE,
    CONTEXT_FILES,
    IMAGE_REPO,
    REMOTE_COMPOSE_FILE,
    RESOURCES,
    SANDBOX_USER,
    STABLE_TAG,
    ImageStatus,
    build_image,
    content_hash,
    content_tag,
    image_status,
    require_image,
)
from smoldataenvs_tasks.sandboxes.docker.session import DockerSession

__all__ = [
    "COMPOSE_FILE",
    "CONTEXT_FILES",
    "IMAGE_REPO",
    "LABEL_CONTENT",
    "LABEL_OWNER",
    "LABEL_SESSION",
    "NOFILE",
    "REMOTE_COMPOSE_FILE",
    "RESOURCES",
    "SANDBOX_USER",
    "STABLE_TAG",
    "DockerSession",
    "ImageStatus",
    "build_image",
    "cleanup_stale",
    "container_args",
    "content_hash",
    "content_tag",
    "docker_binary",
    "image_status",
    "require_image",
]
