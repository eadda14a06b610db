"""Pinned identities of the benchmark's external parts, recorded in every log and report.

Changing any value here changes what a score means: bump `GRADER_VERSION` in
`scorers/verdict.py` or record the new revision in the report, never silently.
"""

DATASET_REPO_ID = "FineEnvs/SmolDataEnvs"
# The revision third-party vendored graders were taken at (docs/design.md "Names and pins").
DATASET_REVISION = "b2bf35647e2381b1ab12c2ad7862cbbe4e8f857b"
DEFAULT_HF_BUCKET = "AdithyaSK/jupyter-agent-kaggle-all"

HUB_SPLITS = ("train", "test", "eval")
SAMPLE_SPLIT = "sample"
ALL_SPLITS = (*HUB_SPLITS, SAMPLE_SPLIT)

TIERS = ("easy", "medium", "hard")
KNOWN_REWARD_MODES = (
    "numeric",
    "flexible",
    "list",
    "list_csv",
    "exact_short",
    "exact_bool",
    "exact",
    "",
)


def split_parquet_path(split: str) -> str:
    """Path of a split's single parquet shard inside the dataset repo or a mirror."""
    return f"data/{split}-00000-of-00001.parquet"


def reward_mode_label(reward_mode: str) -> str:
    """The name a reward mode is reported under (the empty mode has no name of its own)."""
    return reward_mode or "unspecified"
