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
# The bundled sample's own revision (its manifest.json says the same; a test ties them).
SAMPLE_REVISION = "sample-1"
# Rows per split at the pinned revision (the sample at its own). A run over another number of
# rows did not measure the split it names, whatever its name: reports call it `nonstandard` and
# never rank it with standard runs (a 16-row mirror labelled `eval` once reported "complete").
SPLIT_SIZES = {"train": 5000, "test": 250, "eval": 144, SAMPLE_SPLIT: 10}

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


# The empty reward mode's name everywhere (options, Inspect's mode_ metrics, lm-eval's, reports):
# users type it in `reward_modes=empty`. Logs and submissions written before called it
# "unspecified"; they are still read (that name is no dataset mode).
EMPTY_REWARD_MODE = "empty"
OLD_EMPTY_REWARD_MODE = "unspecified"


def reward_mode_label(reward_mode: str) -> str:
    """The name a reward mode is reported under (the empty mode has no name of its own)."""
    return EMPTY_REWARD_MODE if reward_mode in ("", OLD_EMPTY_REWARD_MODE) else reward_mode


def pinned_revision(split: str) -> str:
    """The revision a split is pinned at: the bundled sample's own, else the Hub's."""
    return SAMPLE_REVISION if split == SAMPLE_SPLIT else DATASET_REVISION


def pinned_split_size(split: str, revision: str | None) -> int | None:
    """The split's row count when `revision` is its pinned one; None for an unknown split or
    another revision (nothing is known about its size then)."""
    if revision != pinned_revision(split):
        return None
    return SPLIT_SIZES.get(split)
