"""`smoldataenvs` command line: grade, prefetch, mirror, cache, sandbox, harbor, report, regrade,
verify, leaderboard, validate, compare.

Subcommands live beside the code they drive and are imported only when invoked, so
`smoldataenvs grade` does not pay for importing Inspect or lm-eval.

    smoldataenvs grade 5768.04 5768 --mode numeric --atol 0.05 --rtol 0.01
    smoldataenvs prefetch --split test --tier hard --max-file-mb 500
    smoldataenvs mirror --split test --split eval ./smoldata-mirror
    smoldataenvs report logs/ --out report/
    smoldataenvs regrade logs/x.eval --grader strict
"""

from __future__ import annotations

import importlib

import click

# name -> ("module:attribute" of a click command, one-line help shown without importing it)
_COMMANDS: dict[str, tuple[str, str]] = {
    "grade": ("smoldataenvs_tasks.scorers.cli:grade_command", "Grade answers with the ladder."),
    "prefetch": ("smoldataenvs_tasks.data.cli:prefetch", "Fill the table cache for a split."),
    "mirror": ("smoldataenvs_tasks.data.cli:mirror", "Write an air-gapped mirror directory."),
    "cache": ("smoldataenvs_tasks.data.cli:cache", "Show or clear the local cache."),
    "sandbox": ("smoldataenvs_tasks.sandboxes.cli:sandbox", "Set up and inspect sandboxes."),
    "harbor": (
        "smoldataenvs_tasks.harbor_adapter.cli:harbor",
        "Export SmolDataEnvs as Harbor tasks (docs/harbor.md).",
    ),
    "report": ("smoldataenvs_tasks.results.cli:report_command", "Write submission.json + report."),
    "validate": (
        "smoldataenvs_tasks.validate:validate_command",
        "Certify an environment reproduces the gold.",
    ),
    "compare": (
        "smoldataenvs_tasks.results.cli:compare_command",
        "Per-task agreement of two runs.",
    ),
    "verify": (
        "smoldataenvs_tasks.results.cli:verify_command",
        "Check a submission.json: figures, your data, its logs re-graded.",
    ),
    "leaderboard": (
        "smoldataenvs_tasks.results.cli:leaderboard_command",
        "Rank submissions verified against their logs: md, html, json.",
    ),
    "regrade": (
        "smoldataenvs_tasks.regrade:regrade_command",
        "Re-grade a run's answers under another grader profile.",
    ),
    "lm-eval-path": (
        "smoldataenvs_tasks.lm_eval.paths:lm_eval_path_command",
        "Print the lm-eval task directory.",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # `--help` must not import every subsystem (Inspect, lm-eval) just to list names.
        rows = [(name, help_text) for name, (_, help_text) in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="smoldataenvs_tasks")
def main() -> None:
    """SmolDataEnvs for Inspect AI and lm-evaluation-harness."""


if __name__ == "__main__":
    main()
