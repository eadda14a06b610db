"""The package's root error: every error it raises on purpose is a `SmolDataEnvsError`.

    try:
        ...
    except SmolDataEnvsError as error:   # bad rows, missing data, broken sandboxes, bad files
        print(error)

Each specific error also keeps the built-in base it always had (`ValueError`, `RuntimeError`,
`LookupError`), so existing `except ValueError:` code still catches it. Where they live:
`data.rows.RowValidationError`, `data.source.SourceError`, `data.mirror.MirrorDestinationError`, `data.cache.CacheIntegrityError`,
`data.integrity.UnsafePathError` and `TableCorruptError`, `data.hub.HubUnavailable`, `RemoteNotFound`,
`DownloadError` and `SizeMismatch`,
`data.tables.ListingUnavailable`, `sandboxes.base.SandboxFailure` (and `SandboxLost`,
`SandboxUnavailable`), `scorers.symbolic.SymbolicUnavailableError`,
`replay.ReplayFormatError` and `ReplayMissingError`, `inspect_adapter.setup.SandboxOverrideError`,
`validate.BrokenEnvironment` and `ValidationInputError`, `scorers.grader.UnknownProfileError`,
`inspect_adapter.regrade.RegradeError`, `lm_eval.regrade.LmEvalRegradeError`,
`lm_eval_samples.SamplesFileError`,
`lm_eval.fewshot.FewShotRefused`, `results.model.schema.SubmissionFormatError`,
`results.verify.verifier_data.DataUnavailable`, `run_plan.OptionError` (a run option out of range) and
`run_plan.RunPlanError` (options that select nothing to run). Bad input to a command is
`BadInput`: one line, exit status 2.
"""

import click


class SmolDataEnvsError(Exception):
    """Base of every error smoldataenvs_tasks raises on purpose."""


class BadInput(click.ClickException):
    """Bad input to a command (a file that is not a readable run, a row that is not JSON, a
    tolerance out of range): one line naming what is wrong, exit status 2, like click's usage
    errors."""

    exit_code = 2
