"""Malformed input is one line (issue 24): every malformed submission.json, Inspect log or lm-eval
output given to `verify` or `leaderboard` is one line naming the field and exit status 2, or a
check that fails (exit 1); never a traceback.

The known cases come first (each once printed a ~40-line traceback); then seeded mutations of a
real submission, a real Inspect log and a real lm-eval output folder: deleted keys, values of
other types, NaN and 1e309, deep nesting, truncated files. Every mutation runs through the
command line as a maintainer would run it, and the test counts them.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.publish.submission import submission_sha256
from tests.previous_version import lm_eval_as_previous

SUBMISSION_MUTATIONS = 1000
LOG_MUTATIONS = 150  # per loader: Inspect's .json log, and lm-eval's three files
SEED = 24


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def assert_no_traceback(result: Result, what: str) -> None:
    """Exit 0, 1 (a check failed) or 2 (malformed: exactly one line), and no exception."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        what,
        repr(result.exception),
        result.output[-2000:],
    )
    assert "Traceback" not in result.output, (what, result.output[-2000:])
    assert result.exit_code in (0, 1, 2), (what, result.exit_code, result.output[-2000:])
    if result.exit_code == 2:
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1, (what, result.output[-2000:])


@pytest.fixture(scope="module")
def gold_submission(inspect_gold_log, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("malformed") / "report"
    result = CliRunner().invoke(
        main, ["report", str(inspect_gold_log), "--out", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return out / "submission.json"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def save(sub: Any, path: Path, *, rehash: bool = True) -> Path:
    if rehash and isinstance(sub, dict):
        sub["sha256"] = submission_sha256(sub)
    path.write_text(json.dumps(sub), encoding="utf-8")
    return path


# --- the known cases ---------------------------------------------------------------------------


def test_deeply_nested_json_is_one_line_not_a_recursion_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    for command in (["verify"], ["leaderboard", "--out", str(tmp_path / "lb")]):
        result = run(*command, str(deep))
        assert_no_traceback(result, "deep")
        assert result.exit_code == 2 and "nested too deeply" in result.output


def test_coverage_filters_1_is_one_line_naming_the_field(gold_submission, tmp_path):
    sub = load(gold_submission)
    sub["runs"][0]["coverage"]["filters"] = [1]
    path = save(sub, tmp_path / "filters.json")
    for command in (["verify"], ["leaderboard", "--out", str(tmp_path / "lb")]):
        result = run(*command, str(path))
        assert_no_traceback(result, "filters")
        assert result.exit_code == 2 and "runs[0].coverage.filters" in result.output


def test_a_reward_of_1e309_is_one_line_not_a_value_error(gold_submission, tmp_path):
    text = gold_submission.read_text(encoding="utf-8")
    assert '"reward": 1.0' in text
    path = tmp_path / "huge.json"
    path.write_text(text.replace('"reward": 1.0', '"reward": 1e309', 1), encoding="utf-8")
    for command in (["verify"], ["leaderboard", "--out", str(tmp_path / "lb")]):
        result = run(*command, str(path))
        assert_no_traceback(result, "1e309")
        assert result.exit_code == 2 and "1e309" in result.output


def test_settings_without_their_framework_are_a_deviation_not_a_key_error(
    gold_submission, tmp_path
):
    # Found by the mutation test below: submission.json's settings are any JSON object, and verify
    # named the framework by indexing it.
    sub = load(gold_submission)
    del sub["protocol_settings"]["framework"]
    body = {key: value for key, value in sub.items() if key != "sha256"}
    sub["sha256"] = submission_sha256(body)
    result = run("verify", str(save(sub, tmp_path / "no_framework.json")))
    assert_no_traceback(result, "no framework")
    assert result.exit_code == 1 and "framework: unset" in result.output, result.output


def test_nan_and_a_reward_of_2_name_their_field(gold_submission, tmp_path):
    sub = load(gold_submission)
    sub["tasks"][0]["attempts"][0]["reward"] = 2
    result = run("verify", str(save(sub, tmp_path / "two.json")))
    assert result.exit_code == 2 and "tasks[0].attempts[0].reward" in result.output
    nan = tmp_path / "nan.json"
    nan.write_text(
        gold_submission.read_text(encoding="utf-8").replace('"n_tasks": 10', '"n_tasks": NaN', 1),
        encoding="utf-8",
    )
    result = run("verify", str(nan))
    assert result.exit_code == 2 and "NaN is not a JSON number" in result.output


# --- mutations ---------------------------------------------------------------------------------

# Stands for 5,000 nested lists, which _dump writes as text (json.dumps cannot).
_DEEP = "\u2063deep\u2063"
_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    7,
    2.5,
    1e308,
    10**40,
    "",
    "x",
    "../../x",
    "\x00",
    [],
    [1],
    [None, "a"],
    {},
    {"a": 1},
    {"value": None, "ci95": [0, 1], "n_tasks": 1},
]


def _nodes(tree: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield from _nodes(value, (*path, index))


def _parent(tree: Any, path: tuple) -> Any:
    for step in path[:-1]:
        tree = tree[step]
    return tree


def mutate_tree(tree: Any, rng: random.Random) -> Any:
    """One random edit of a JSON tree: delete, replace by another type, wrap, stringify,
    duplicate, or nest deeply."""
    tree = copy.deepcopy(tree)
    nodes = list(_nodes(tree))
    path = rng.choice(nodes[1:]) if len(nodes) > 1 else ()
    if not path:
        return rng.choice(_VALUES)
    parent, key = _parent(tree, path), path[-1]
    old = parent[key]
    action = rng.randrange(7)
    if action == 0:
        del parent[key]
    elif action == 1:
        parent[key] = copy.deepcopy(rng.choice(_VALUES))
    elif action == 2:
        parent[key] = [old]
    elif action == 3:
        parent[key] = json.dumps(old)
    elif action == 4 and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(old))
    elif action == 5:
        if rng.random() < 0.5:
            deep: Any = old
            for _ in range(50):
                deep = [deep]
            parent[key] = deep
        else:  # deeper than Python's json walks: spliced in as text by _dump
            parent[key] = _DEEP
    elif isinstance(old, int | float) and not isinstance(old, bool):
        parent[key] = rng.choice((old + 1, -old, old * 1000, 0.5))
    else:
        parent[key] = copy.deepcopy(rng.choice(_VALUES))
    return tree


def mutate_text(text: str, rng: random.Random) -> str:
    """One random edit of a file's text: truncate, a literal out of range, stray bytes."""
    action = rng.randrange(4)
    if action == 0:
        return text[: rng.randrange(len(text))]
    if action == 1:
        return text.replace("1.0", rng.choice(("1e309", "NaN", "-Infinity", "1e-400")), 1)
    if action == 2:
        at = rng.randrange(len(text))
        return text[:at] + rng.choice(("\x00", "}", "]]", '"', "\ufffd")) + text[at:]
    return "[" * 3000 + text


def _dump(tree: Any) -> str:
    return json.dumps(tree).replace(json.dumps(_DEEP), "[" * 5000 + "]" * 5000)


@pytest.mark.slow
def test_1000_mutations_of_a_submission_never_give_a_traceback(gold_submission, tmp_path):
    base = load(gold_submission)
    text = gold_submission.read_text(encoding="utf-8")
    rng = random.Random(SEED)
    target = tmp_path / "mutated.json"
    exits = {0: 0, 1: 0, 2: 0}
    for number in range(SUBMISSION_MUTATIONS):
        if number % 5 == 4:
            target.write_text(mutate_text(text, rng), encoding="utf-8")
        else:
            mutated = mutate_tree(base, rng)
            if isinstance(mutated, dict) and rng.random() < 0.5:
                body = {k: v for k, v in mutated.items() if k != "sha256"}
                try:  # past the hash check, into the figures and the data
                    mutated["sha256"] = submission_sha256(body)
                except (TypeError, ValueError, RecursionError):
                    pass
            target.write_text(_dump(mutated), encoding="utf-8")
        if number % 10 == 9:
            result = run(
                "leaderboard", str(gold_submission), str(target), "--out", str(tmp_path / "lb")
            )
        else:
            result = run("verify", str(target))
        assert_no_traceback(result, f"mutation {number}")
        exits[result.exit_code] += 1
    assert sum(exits.values()) == SUBMISSION_MUTATIONS
    # the mutations reach every outcome: malformed (2), a failed check (1), and harmless (0)
    assert exits[2] > 100 and exits[1] > 100, exits


def _log_copy(src: Path, dst: Path) -> Path:
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return dst


@pytest.mark.slow
def test_mutated_lm_eval_output_never_gives_a_traceback(
    lm_eval_mixed_dir, gold_submission, tmp_path
):
    (folder,) = [p for p in lm_eval_mixed_dir.iterdir() if p.is_dir()]
    files = sorted([*folder.glob("results_*.json"), *folder.glob("samples_*.jsonl")])
    assert len(files) == 2
    rng = random.Random(SEED + 1)
    exits = {0: 0, 1: 0, 2: 0}
    for number in range(LOG_MUTATIONS):
        work = _log_copy(folder, tmp_path / f"m{number}" / folder.name)
        victim = work / rng.choice(files).name
        text = victim.read_text(encoding="utf-8")
        if victim.suffix == ".json":
            mutated = (
                mutate_text(text, rng)
                if number % 4 == 3
                else _dump(mutate_tree(json.loads(text), rng))
            )
        else:
            lines = text.splitlines()
            at = rng.randrange(len(lines))
            lines[at] = (
                mutate_text(lines[at], rng)
                if number % 4 == 3
                else _dump(mutate_tree(json.loads(lines[at]), rng))
            )
            mutated = "\n".join(lines) + "\n"
        victim.write_text(mutated, encoding="utf-8")
        result = run("verify", str(gold_submission), "--logs", str(work))
        assert_no_traceback(result, f"lm-eval mutation {number} of {victim.name}")
        exits[result.exit_code] += 1
        shutil.rmtree(work.parent)
    assert sum(exits.values()) == LOG_MUTATIONS and exits[2] > LOG_MUTATIONS // 4, exits


@pytest.mark.slow
def test_mutated_inspect_log_never_gives_a_traceback(inspect_gold_log, gold_submission, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    as_json = tmp_path / "base" / "gold.json"
    as_json.parent.mkdir()
    write_eval_log(read_eval_log(str(inspect_gold_log)), str(as_json), format="json")
    base = json.loads(as_json.read_text(encoding="utf-8"))
    text = as_json.read_text(encoding="utf-8")
    rng = random.Random(SEED + 2)
    target = tmp_path / "logs" / "gold.json"
    target.parent.mkdir()
    exits = {0: 0, 1: 0, 2: 0}
    for number in range(LOG_MUTATIONS):
        if number % 4 == 3:
            target.write_text(mutate_text(text, rng), encoding="utf-8")
        else:
            target.write_text(_dump(mutate_tree(base, rng)), encoding="utf-8")
        result = run("verify", str(gold_submission), "--logs", str(target))
        assert_no_traceback(result, f"Inspect log mutation {number}")
        exits[result.exit_code] += 1
    assert sum(exits.values()) == LOG_MUTATIONS and exits[2] > LOG_MUTATIONS // 4, exits


@pytest.mark.parametrize(
    "line",
    ['{"task_id": "t", "verdict": [1]}', "[" * 5000, '{"task_id": "t"}', "not json", "[1]"],
)
def test_regrade_of_a_malformed_lm_eval_folder_is_one_line(line, tmp_path):
    folder = tmp_path / "out" / "model"
    folder.mkdir(parents=True)
    (folder / "verdicts_2026-01-01T00-00-00.jsonl").write_text(line + "\n", encoding="utf-8")
    result = run(
        "regrade", str(tmp_path / "out"), "--grader", "strict", "--out", str(tmp_path / "r")
    )
    assert_no_traceback(result, line[:20])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "verdicts_2026-01-01T00-00-00.jsonl" in result.output


# --- the fields the loaders read, each given values of every kind (issue 35) --------------------
# A lone surrogate and NaN are what JSON can carry that Python strings and floats choke on later
# (hashing, printing, comparing); the others are wrong types and markup.
_HOSTILE: list[Any] = [5, [1], None, float("nan"), "\ud800", {}, "<b>x</b> | *y*", -1e308]
FIELD_MUTATIONS = 120  # per framework


def _leaves(tree: Any, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(tree, list) and tree:
        for index, value in enumerate(tree[:2]):
            yield from _leaves(value, (*path, index))
    else:
        yield path


def _set(tree: Any, path: tuple, value: Any) -> Any:
    tree = copy.deepcopy(tree)
    _parent(tree, path)[path[-1]] = value
    return tree


def _run_both(log_path: Path, gold_submission: Path, out: Path, what: str) -> tuple[int, int]:
    reported = run("report", str(log_path), "--out", str(out), "--allow-partial")
    assert_no_traceback(reported, f"report: {what}")
    verified = run("verify", str(gold_submission), "--logs", str(log_path))
    assert_no_traceback(verified, f"verify: {what}")
    return reported.exit_code, verified.exit_code


@pytest.mark.slow
def test_every_field_the_inspect_loader_reads_given_hostile_values_is_one_line_in_report(
    inspect_gold_log, gold_submission, tmp_path
):
    from inspect_ai.log import read_eval_log, write_eval_log

    as_json = tmp_path / "base" / "gold.json"
    as_json.parent.mkdir()
    write_eval_log(read_eval_log(str(inspect_gold_log)), str(as_json), format="json")
    base = json.loads(as_json.read_text(encoding="utf-8"))
    # What the loader reads: the header, the plan's config, the stats, and a sample's id, epoch,
    # metadata, scores (the verdict), error, usage; not the transcript's text.
    read = ("eval", "plan", "stats", "status", "results")
    sample_keys = ("id", "epoch", "metadata", "scores", "error", "model_usage", "output")
    paths = [p for p in _leaves(base) if p[0] in read]
    paths += [p for p in _leaves(base) if p[:2] == ("samples", 0) and p[2] in sample_keys]
    paths += [("samples", 0, "error"), ("samples", 0, "scores", "program_scorer", "metadata")]
    rng = random.Random(SEED + 3)
    picks = [(rng.choice(paths), rng.choice(_HOSTILE)) for _ in range(FIELD_MUTATIONS)]
    target = tmp_path / "logs" / "gold.json"
    target.parent.mkdir()
    exits: dict[int, int] = {0: 0, 1: 0, 2: 0}
    for number, (path, value) in enumerate(picks):
        target.write_text(json.dumps(_set(base, path, value)), encoding="utf-8")
        code, _ = _run_both(target, gold_submission, tmp_path / "r", f"{number} {path}={value!r}")
        exits[code] += 1
    assert sum(exits.values()) == FIELD_MUTATIONS and exits[2] > 10 and exits[0] > 10, exits


@pytest.mark.slow
def test_every_field_the_lm_eval_loader_reads_given_hostile_values_is_one_line_in_report(
    lm_eval_mixed_dir, gold_submission, tmp_path
):
    (folder,) = [p for p in lm_eval_mixed_dir.iterdir() if p.is_dir()]
    # This version's output, and the previous version's (its verdicts file, `_` doc columns).
    previous = lm_eval_as_previous(folder, tmp_path / "previous" / folder.name)
    trees = {}
    for base, pattern in [
        (folder, "results_*.json"),
        (folder, "samples_*.jsonl"),
        (previous, "verdicts_*.jsonl"),
        (previous, "samples_*.jsonl"),
    ]:
        (path,) = base.glob(pattern)
        text = path.read_text(encoding="utf-8")
        # results_*.json is one indented document; each .jsonl line is one document.
        document = text if path.suffix == ".json" else text.splitlines()[0]
        trees[base, path.name] = json.loads(document)
    paths = [(key, p) for key, tree in trees.items() for p in _leaves(tree) if p]
    rng = random.Random(SEED + 4)
    exits: dict[int, int] = {0: 0, 1: 0, 2: 0}
    for number in range(FIELD_MUTATIONS):
        ((base, name), path), value = rng.choice(paths), rng.choice(_HOSTILE)
        work = _log_copy(base, tmp_path / f"m{number}" / folder.name)
        victim = work / name
        text = json.dumps(_set(trees[base, name], path, value))
        if victim.suffix == ".jsonl":
            lines = victim.read_text(encoding="utf-8").splitlines()
            text = "\n".join([text, *lines[1:]]) + "\n"
        victim.write_text(text, encoding="utf-8")
        code, _ = _run_both(work.parent, gold_submission, tmp_path / "r", f"{number} {name} {path}")
        exits[code] += 1
        shutil.rmtree(work.parent)
    assert sum(exits.values()) == FIELD_MUTATIONS and exits[2] > 10, exits
