"""Files a user hands `report` (the price table, the submitter's metadata): JSON by its suffix,
else YAML, read with the same one-line errors whatever the file holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json_or_yaml(path: Path, what: str, error: type[Exception]) -> Any:
    """The file's data; `error` with one line naming `path` and `what` it should be otherwise."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not a readable {what}: {exc}") from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise error(f"{path}: not JSON or YAML: {first}") from None
