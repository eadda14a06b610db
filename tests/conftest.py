"""Suite-wide setup: the repository root on sys.path (for `tests.*` helper modules)."""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))
