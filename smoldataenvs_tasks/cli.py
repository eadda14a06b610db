"""`smoldataenvs` command line: grade, prefetch, mirror, cache, sandbox, report, validate, compare.

Subcommands live beside the code they drive and are imported only when invoked, so
`smoldataenvs grade` does not pay for importing Inspect or lm-eval.

    smoldataenvs grade 5768.04 5768 --mode numeric --atol 0.05 --rtol 0.01
    smoldataenvs prefetch --split test --tier hard --max-file-mb 500
    smoldataenvs mirror --split test --split eval ./smoldata-mirror
    smoldataenvs report logs/ --out report/
"""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute" of a click command
_COMMANDS: dict[str, str] = {
    "grade": "smoldataenvs_tasks.scorers.grade_cli:grade",
    "prefetch": "smoldataenvs_tasks.data.cli:prefetch",
    "mirror": "smoldataenvs_tasks.data.cli:mirror",
    "cache": "smoldataenvs_tasks.data.cli:cache",
    "sandbox": "smoldataenvs_tasks.sandboxes.cli:sandbox",
    "report": "smoldataenvs_tasks.report:report_command",
    "validate": "smoldataenvs_tasks.validate:validate_command",
    "compare": "smoldataenvs_tasks.report:compare_command",
    "lm-eval-path": "smoldataenvs_tasks.lm_eval.paths:lm_eval_path_command",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="smoldataenvs_tasks")
def main() -> None:
    """SmolDataEnvs for Inspect AI and lm-evaluation-harness."""


if __name__ == "__main__":
    main()
