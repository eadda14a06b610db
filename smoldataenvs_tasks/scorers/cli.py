"""`smoldataenvs grade`: grade one answer, or a JSONL file of answers, with the grader ladder.

    smoldataenvs grade 5768.04 5768 --mode numeric --atol 0.05 --rtol 0.01
    smoldataenvs grade --file rows.jsonl            # fields: gold, candidate, reward_mode, atol, rtol
    smoldataenvs grade --examples                   # the bundled rows that walk every rung
    smoldataenvs grade --examples --json            # one JSON object per row, then a summary
    smoldataenvs grade 12 "12 or maybe 17" --grader strict   # the strict profile (docs/scoring.md)

Rows may omit `reward_mode` (""), `atol` and `rtol` (the grader's defaults, 1e-3). A row that is
not a JSON object, lacks `gold`/`candidate`, or has a tolerance that is not a finite number >= 0
is an error naming its line; nothing is graded until every row has been read. `--atol`/`--rtol`
are held to the same rule. Bad input is one line on stderr and exit code 2.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import click

from smoldataenvs_tasks.errors import BadInput
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, GRADER_PROFILES

EXAMPLES_RESOURCE = "grade_examples.jsonl"


@dataclass(frozen=True)
class _Row:
    line: int
    gold: str
    candidate: str
    reward_mode: str
    atol: float
    rtol: float


def _examples_path() -> Path:
    return Path(str(resources.files("smoldataenvs_tasks") / "sample" / EXAMPLES_RESOURCE))


def _tolerance(value: Any, field: str, where: str) -> float:
    if value is None:
        return 1e-3
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInput(f"{where}: {field} must be a number, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise BadInput(f"{where}: {field} must be a finite number >= 0, not {value!r}")
    return float(value)


def _read_rows(path: Path) -> list[_Row]:
    rows: list[_Row] = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 text (byte {exc.start}); rows are JSONL") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{where}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise BadInput(f"{where}: JSON nested too deeply") from None
        if not isinstance(data, dict):
            raise BadInput(f"{where}: expected a JSON object")
        for field in ("gold", "candidate"):
            if field not in data:
                raise BadInput(f"{where}: missing field {field!r}")
            if data[field] is not None and not isinstance(data[field], str | int | float):
                raise BadInput(f"{where}: {field} must be a string")
        mode = data.get("reward_mode") or ""
        if not isinstance(mode, str):
            raise BadInput(f"{where}: reward_mode must be a string")
        rows.append(
            _Row(
                line=number,
                gold=data["gold"],
                candidate=data["candidate"],
                reward_mode=mode,
                atol=_tolerance(data.get("atol"), "atol", where),
                rtol=_tolerance(data.get("rtol"), "rtol", where),
            )
        )
    return rows


@click.command(
    "grade",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("gold", required=False)
@click.argument("candidate", required=False)
@click.option("--mode", "reward_mode", default="", help="The row's reward_mode (default: '').")
@click.option("--atol", type=float, default=1e-3, show_default=True, help="Absolute tolerance.")
@click.option("--rtol", type=float, default=1e-3, show_default=True, help="Relative tolerance.")
@click.option(
    "--file",
    "file_",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A JSONL file of rows: gold, candidate, reward_mode, atol, rtol.",
)
@click.option("--examples", is_flag=True, help="Grade the bundled example rows.")
@click.option(
    "--grader",
    type=click.Choice(GRADER_PROFILES),
    default=DEFAULT_PROFILE,
    show_default=True,
    help="Grader profile: the published grader (default) or strict.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def grade_command(
    gold: str | None,
    candidate: str | None,
    reward_mode: str,
    atol: float,
    rtol: float,
    file_: Path | None,
    examples: bool,
    grader: str,
    as_json: bool,
) -> None:
    """Grade CANDIDATE against GOLD (or every row of --file / --examples) with the ladder."""
    from smoldataenvs_tasks.scorers.grader import grade
    from smoldataenvs_tasks.scorers.symbolic import SymbolicUnavailableError

    sources = (gold is not None) + (file_ is not None) + examples
    if sources != 1 or (gold is not None and candidate is None):
        raise click.UsageError("give GOLD and CANDIDATE, or --file ROWS.jsonl, or --examples")
    for option, value in (("--atol", atol), ("--rtol", rtol)):
        # what --file refuses in a row is refused here too (the grader would read it as 0.0)
        if not math.isfinite(value) or value < 0:
            raise BadInput(f"{option} must be a finite number >= 0, not {value:g}")

    try:
        if gold is not None and candidate is not None:
            result = grade(
                gold, candidate, reward_mode=reward_mode, abs_tol=atol, rel_tol=rtol, profile=grader
            )
            if as_json:
                click.echo(json.dumps(_as_dict(result)))
            else:
                click.echo(f"{result.reward:g} {_method(result)}")
            return

        path = _examples_path() if examples else file_
        assert path is not None
        rows = _read_rows(path)
        methods: Counter[str] = Counter()
        total = 0.0
        for row in rows:
            result = grade(
                row.gold,
                row.candidate,
                reward_mode=row.reward_mode,
                abs_tol=row.atol,
                rel_tol=row.rtol,
                profile=grader,
            )
            methods[result.method] += 1
            total += result.reward
            if as_json:
                click.echo(json.dumps({"line": row.line, **_as_dict(result)}, ensure_ascii=False))
            else:
                click.echo(
                    f"{row.line:>4}  {result.reward:g}  {_method(result):<20} "
                    f"{_show(row.gold)} vs {_show(row.candidate)}"
                )
    except SymbolicUnavailableError as exc:
        raise click.ClickException(f"the symbolic rung is unavailable: {exc}") from exc

    n = len(rows)
    mean = total / n if n else 0.0
    if as_json:
        click.echo(json.dumps({"summary": {"rows": n, "mean_reward": mean, **dict(methods)}}))
        return
    click.echo(f"\n{n} rows, mean reward {mean:.3f}")
    for method, count in sorted(methods.items(), key=lambda item: (-item[1], item[0])):
        click.echo(f"  {method:<20} {count}")


def _as_dict(result: Any) -> dict[str, Any]:
    data = {"reward": result.reward, "method": result.method}
    if result.rule is not None:
        data["rule"] = result.rule
    return data


def _method(result: Any) -> str:
    return result.method if result.rule is None else f"{result.method} ({result.rule})"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
